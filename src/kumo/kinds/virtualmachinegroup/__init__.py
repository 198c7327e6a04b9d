"""VirtualMachineGroup → member VirtualMachine objects + one Nova server group."""
