#!/usr/bin/env bash
# What a bare Debian bookworm with Python 3.11 lacks before `make up` / `make test` can
# run: make itself (and python3-venv, which dev/venv.sh also installs when missing).
# Everything else is installed by the targets themselves. CI (.ci/run) calls this first.
source "$(dirname "$0")/lib.sh"
command -v apt-get >/dev/null || die "not a Debian machine: install make and Python 3.11's venv yourself"
apt_install make
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || apt_install python3-venv
