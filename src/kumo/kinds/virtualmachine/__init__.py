"""VirtualMachine → one Nova server."""
