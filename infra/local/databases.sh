# Sourced by test.sh after env.sh: starts a throwaway PostgreSQL and MariaDB
# (Debian's postgresql and mariadb-server) on free ports, each in a temp dir,
# for the Postgres and MySQL node tests, and exports where they listen:
#   INSTANCE_AI_TEST_POSTGRES=host:port (user postgres, password pgpass, database postgres)
#   INSTANCE_AI_TEST_MYSQL=host:port    (user root, password mypass, database n8n)
# A server that is missing or does not start is left out with a message; the
# tests that need it then skip, saying why. Stopped and removed on exit.

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Root installs the packages when they are missing (as env.sh does chromium).
pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
if { [ -z "$pg_bin" ] || ! command -v mariadbd >/dev/null 2>&1; } && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  log "installing Debian's postgresql and mariadb-server for the database node tests"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql mariadb-server >/dev/null || true
  pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
fi

DB_DIR="$(mktemp -d "${TMPDIR:-/tmp}/instance-ai-db.XXXXXX")"
CLEANUP_DIRS+=("$DB_DIR")
# PostgreSQL refuses to run as root: then it runs as Debian's postgres user
# (setpriv execs, so the pid kept for the cleanup is the server's).
as_db_user() {
  if [ "$(id -u)" = 0 ]; then setpriv --reuid="$1" --regid="$1" --init-groups -- "${@:2}"; else "${@:2}"; fi
}

if [ -n "$pg_bin" ]; then
  PG_PORT="$(free_port)"
  mkdir -p "$DB_DIR/pg"
  [ "$(id -u)" = 0 ] && chown postgres "$DB_DIR" "$DB_DIR/pg"
  echo pgpass >"$DB_DIR/pg.pw"; chmod 644 "$DB_DIR/pg.pw"
  if as_db_user postgres "$pg_bin/initdb" -D "$DB_DIR/pg/data" -U postgres --pwfile="$DB_DIR/pg.pw" -A scram-sha-256 >"$DB_DIR/pg.log" 2>&1; then
    as_db_user postgres "$pg_bin/postgres" -D "$DB_DIR/pg/data" -p "$PG_PORT" -k "$DB_DIR/pg" -c listen_addresses=127.0.0.1 -c fsync=off >>"$DB_DIR/pg.log" 2>&1 &
    CLEANUP_PIDS+=("$!")
    for _ in $(seq 1 100); do
      if (echo >"/dev/tcp/127.0.0.1/$PG_PORT") 2>/dev/null; then export INSTANCE_AI_TEST_POSTGRES="127.0.0.1:$PG_PORT"; break; fi
      sleep 0.1
    done
  fi
  [ -n "${INSTANCE_AI_TEST_POSTGRES:-}" ] && log "postgres on $INSTANCE_AI_TEST_POSTGRES" || log "postgres did not start (see $DB_DIR/pg.log): the Postgres node tests skip"
else
  log "postgresql is missing (apt-get install postgresql): the Postgres node tests skip"
fi

if command -v mariadbd >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1; then
  MY_PORT="$(free_port)"
  my_user="$(id -un)"
  if mariadb-install-db --no-defaults --datadir="$DB_DIR/my" --user="$my_user" --auth-root-authentication-method=normal --skip-test-db >"$DB_DIR/my.log" 2>&1; then
    mariadbd --no-defaults --datadir="$DB_DIR/my" --user="$my_user" --port="$MY_PORT" --bind-address=127.0.0.1 \
      --socket="$DB_DIR/my.sock" --pid-file="$DB_DIR/my.pid" --skip-log-bin --innodb-flush-log-at-trx-commit=0 >>"$DB_DIR/my.log" 2>&1 &
    CLEANUP_PIDS+=("$!")
    for _ in $(seq 1 100); do
      if mariadb --no-defaults -S "$DB_DIR/my.sock" -u root -e \
        "ALTER USER root@localhost IDENTIFIED BY 'mypass'; CREATE USER IF NOT EXISTS root@'127.0.0.1' IDENTIFIED BY 'mypass'; GRANT ALL ON *.* TO root@'127.0.0.1'; CREATE DATABASE IF NOT EXISTS n8n" >>"$DB_DIR/my.log" 2>&1; then
        export INSTANCE_AI_TEST_MYSQL="127.0.0.1:$MY_PORT"; break
      fi
      sleep 0.1
    done
  fi
  [ -n "${INSTANCE_AI_TEST_MYSQL:-}" ] && log "mariadb on $INSTANCE_AI_TEST_MYSQL" || log "mariadb did not start (see $DB_DIR/my.log): the MySQL node tests skip"
else
  log "mariadb-server is missing (apt-get install mariadb-server): the MySQL node tests skip"
fi
