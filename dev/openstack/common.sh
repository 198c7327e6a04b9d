#!/usr/bin/env bash
# common.sh — the shared contract of the local OpenStack lab (sourced, never run).
#
# Why: every service script under services/ (ours and the Octavia/Designate ones)
# needs the same addresses, one password, one place for generated config/data, and
# the same idempotent Keystone/DB helpers. Keeping them here means a service file
# only says what is specific to that service.
#
# Contract (names other scripts rely on — do not rename):
#   vars : LAB_HOST LAB_REGION LAB_PASSWORD LAB_ETC LAB_DATA LAB_RUN TRANSPORT_URL
#          KEYSTONE_URL PY3 LAB_PAGE_SIZE OS_CLIENT_CONFIG_FILE (exported)
#   funcs: db_create NAME · db_url NAME · os_admin ARGS... · ks_service_user NAME ·
#          ks_register_service NAME TYPE URL · write_authtoken CONF NAME ·
#          ini_set FILE SECTION KEY VALUE · wait_http URL TIMEOUT · uwsgi_app · lab_mysql
# A service file services/<svc>.sh defines <svc>_packages, <svc>_configure,
# <svc>_bootstrap, <svc>_start, <svc>_stop, <svc>_ready, optionally <svc>_cloud (see lab.sh).
set -euo pipefail

# shellcheck source=../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

LAB_DIR="$KUMO_ROOT/dev/openstack"
LAB_HOST=127.0.0.1
LAB_REGION=tokyo1                      # the seed manifests say `region: tokyo1`
LAB_PASSWORD="${LAB_PASSWORD:-kumo-lab-pw}"  # local-only, loopback-only lab secret
LAB_ROOT="$KUMO_STATE/openstack"
LAB_ETC="$LAB_ROOT/etc"                # generated config, one subdir per service
LAB_DATA="$LAB_ROOT/data"              # databases, images, stamps (<svc>.bootstrapped)
LAB_RUN="$LAB_ROOT/run"                # sockets, runtime files
TRANSPORT_URL="rabbit://guest:guest@127.0.0.1:5672/"
KEYSTONE_URL="http://127.0.0.1:5000/v3"
PY3=/usr/bin/python3                   # Debian's python; `python3` is a pyenv shim here
MYSQL_SOCKET="$LAB_RUN/mysqld.sock"
OS_CLIENT_CONFIG_FILE="$KUMO_STATE/clouds.yaml"
# Items per page of a listing of Cinder and Manila (their osapi_max_limit; real clouds
# answer 1,000): small, so that every client of the lab pages. `lab.sh reconfigure SVC`
# applies a new KUMO_LAB_PAGE_SIZE to a running lab.
LAB_PAGE_SIZE="${KUMO_LAB_PAGE_SIZE:-5}"
[[ "$LAB_PAGE_SIZE" =~ ^[1-9][0-9]*$ ]] || die "KUMO_LAB_PAGE_SIZE must be a positive integer, not '$LAB_PAGE_SIZE'"
export OS_CLIENT_CONFIG_FILE
# Debian's CLIs must not pick up a virtualenv/pyenv python path.
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV 2>/dev/null || true
mkdir -p "$LAB_ETC" "$LAB_DATA" "$LAB_RUN"

# lab_mysql ARGS... — mysql client as root over the lab's unix socket.
lab_mysql() { mysql --socket="$MYSQL_SOCKET" -u root "$@"; }

# db_create NAME — idempotent: database NAME, user NAME@127.0.0.1 and @localhost.
db_create() {
  local n="$1"
  lab_mysql -e "
    CREATE DATABASE IF NOT EXISTS \`$n\` CHARACTER SET utf8mb4;
    CREATE USER IF NOT EXISTS '$n'@'127.0.0.1' IDENTIFIED BY '$LAB_PASSWORD';
    CREATE USER IF NOT EXISTS '$n'@'localhost' IDENTIFIED BY '$LAB_PASSWORD';
    GRANT ALL PRIVILEGES ON \`$n\`.* TO '$n'@'127.0.0.1';
    GRANT ALL PRIVILEGES ON \`$n\`.* TO '$n'@'localhost';"
}

# db_url NAME — SQLAlchemy URL of database NAME.
db_url() { echo "mysql+pymysql://$1:$LAB_PASSWORD@127.0.0.1/$1"; }

# os_admin ARGS... — the openstack CLI as the cloud admin (clouds.yaml entry kumo-admin).
os_admin() { /usr/bin/openstack --os-cloud kumo-admin "$@"; }

# ks_service_user NAME — idempotent user NAME in project `service` with roles admin and
# service (service tokens are checked for the `service` role, LAB.md pitfall 3).
# Implemented in ks.py: one openstacksdk session instead of several CLI start-ups.
ks_service_user() { LAB_PASSWORD="$LAB_PASSWORD" LAB_REGION="$LAB_REGION" "$PY3" "$LAB_DIR/ks.py" service-user "$1"; }

# ks_register_service NAME TYPE URL — idempotent service + public/internal/admin endpoints
# in LAB_REGION (an existing endpoint with another URL is updated).
ks_register_service() { LAB_PASSWORD="$LAB_PASSWORD" LAB_REGION="$LAB_REGION" "$PY3" "$LAB_DIR/ks.py" register "$1" "$2" "$3"; }

# ini_set FILE SECTION KEY VALUE — set one option (creates FILE and SECTION as needed).
ini_set() {
  local f="$1" s="$2" k="$3" v="$4"
  mkdir -p "$(dirname "$f")"; [ -f "$f" ] || : >"$f"
  if command -v crudini >/dev/null 2>&1; then
    crudini --set "$f" "$s" "$k" "$v"
  else
    "$PY3" - "$f" "$s" "$k" "$v" <<'PY'
import configparser, sys
f, s, k, v = sys.argv[1:]
c = configparser.RawConfigParser(strict=False); c.optionxform = str; c.read(f)
if s != "DEFAULT" and not c.has_section(s): c.add_section(s)
c.set(s, k, v)
with open(f, "w") as fh: c.write(fh)
PY
  fi
}

# write_authtoken CONF NAME — [keystone_authtoken] and [service_user] for service user NAME.
# Appends both sections in one go when CONF has neither (the usual case: configure
# functions regenerate their files); otherwise sets the keys one by one.
write_authtoken() {
  local f="$1" n="$2" s k
  local -a common=(
    "auth_url=http://$LAB_HOST:5000" auth_type=password project_domain_name=Default
    user_domain_name=Default project_name=service "username=$n" "password=$LAB_PASSWORD"
    "region_name=$LAB_REGION")
  if ! grep -qE '^\[(keystone_authtoken|service_user)\]' "$f" 2>/dev/null; then
    {
      echo; echo "[keystone_authtoken]"
      echo "www_authenticate_uri = http://$LAB_HOST:5000"
      echo "service_token_roles_required = true"
      for k in "${common[@]}"; do echo "${k%%=*} = ${k#*=}"; done
      echo; echo "[service_user]"
      echo "send_service_user_token = true"
      for k in "${common[@]}"; do echo "${k%%=*} = ${k#*=}"; done
    } >>"$f"
    return 0
  fi
  ini_set "$f" keystone_authtoken www_authenticate_uri "http://$LAB_HOST:5000"
  ini_set "$f" keystone_authtoken service_token_roles_required true
  ini_set "$f" service_user send_service_user_token true
  for s in keystone_authtoken service_user; do
    for k in "${common[@]}"; do ini_set "$f" "$s" "${k%%=*}" "${k#*=}"; done
  done
}

# http_answers URL — true when URL gives any HTTP answer below 500.
http_answers() {
  local code
  code="$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$1" 2>/dev/null)" || true
  [ -n "$code" ] && [ "$code" != 000 ] && [ "$code" -lt 500 ]
}

# wait_http URL TIMEOUT — poll until URL answers (any status < 500).
wait_http() { wait_for "$1" "${2:-60}" http_answers "$1"; }

# stamp_done NAME / stamp_set NAME — bootstrap guards in $LAB_DATA.
stamp_done() { [ -f "$LAB_DATA/$1.bootstrapped" ]; }
stamp_set() { touch "$LAB_DATA/$1.bootstrapped"; }

# lab_pid NAME — recorded pid of a lab daemon (empty when not running).
lab_pid() { if is_running "$1"; then cat "$KUMO_STATE/pids/$1.pid"; fi; }

# uwsgi_app NAME PORT WSGI_FILE PROCESSES [UWSGI_ARGS...] — run a WSGI app under uwsgi on
# loopback ($UWSGI_THREADS threads per process, default 2). `Connection: close` avoids
# ECONNRESET on reused client connections (LAB.md pitfall 1). Extra arguments go to
# uwsgi (e.g. --env KEY=VALUE).
uwsgi_app() {
  local name="$1" port="$2" wsgi="$3" procs="${4:-2}"; shift 4 || shift $#
  start_daemon "$name" /usr/bin/uwsgi --plugin python3 --http-socket "$LAB_HOST:$port" \
    --wsgi-file "$wsgi" --master --processes "$procs" --threads "${UWSGI_THREADS:-2}" --die-on-term \
    --add-header "Connection: close" --buffer-size 65535 --lazy-apps --need-app \
    --pidfile "$LAB_RUN/$name.uwsgi.pid" "$@"
}

# The four clouds.yaml entries: admin plus one user per demo project.
LAB_PROJECTS=(kumo-demo kumo-other kumo-bench)

# lab_write_clouds_yaml — (re)write $OS_CLIENT_CONFIG_FILE. Users are named like their
# projects and share LAB_PASSWORD; the admin entry works as soon as Keystone is bootstrapped.
lab_write_clouds_yaml() {
  local p tmp="$OS_CLIENT_CONFIG_FILE.tmp"
  {
    echo "# Generated by dev/openstack (local lab on 127.0.0.1). Do not edit."
    echo "clouds:"
    _cloud_entry kumo-admin admin admin
    for p in "${LAB_PROJECTS[@]}"; do _cloud_entry "$p" "$p" "$p"; done
  } >"$tmp"
  mv "$tmp" "$OS_CLIENT_CONFIG_FILE"
}
_cloud_entry() {
  cat <<YAML
  $1:
    region_name: $LAB_REGION
    identity_api_version: 3
    interface: public
    auth_type: password
    auth:
      auth_url: $KEYSTONE_URL
      username: $2
      password: $LAB_PASSWORD
      project_name: $3
      user_domain_name: Default
      project_domain_name: Default
YAML
}
