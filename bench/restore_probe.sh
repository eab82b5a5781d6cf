#!/bin/bash
# Issue 52's restore probe: a database deleted under a running sweep of 200
# command jobs (0.4 s each, one worker with 2 slots, --backup-every 10), the
# coordinator killed with -9 25 s in, restarted with --restore-from. Says how
# many jobs were done before the kill, in the newest backup and at the end,
# how many ran twice, and how many runs found another run of their job alive
# (each run holds a flock on its job's lock file while any of it lives).
#   bench/restore_probe.sh [RESTORE_HOLD_S]     (from the repository root)
set -u
hold=${1:-12}
B=$(pwd)/build/bin
D=$(mktemp -d /tmp/tailsweep_restore_probe.XXXXXX)
port=$((40000 + $$ % 20000))
cat > "$D/job.sh" <<J
#!/bin/sh
exec 9>"$D/lock-\$TAILSWEEP_JOB_ID"
flock -n 9 || echo "\$TAILSWEEP_JOB_ID" >> "$D/overlaps.log"
echo "\$TAILSWEEP_JOB_ID" >> "$D/starts.log"
echo '{"step": 1, "loss": 1}' >> "\$TAILSWEEP_METRICS_FILE"
sleep 0.4
J
chmod +x "$D/job.sh"
printf 'name: probe\nkind: command\ncommand: [%s/job.sh]\ngrid:\n  x: [%s]\n' \
  "$D" "$(seq -s, 1 200)" > "$D/spec.yaml"
coordinator() {
  exec "$B/tailsweep-coordinator" --db "$D/db" --data-dir "$D/data" \
    --listen "127.0.0.1:$port" --backup-dir "$D/backups" --backup-every 10 "$@"
}
coordinator > "$D/coordinator1.log" 2>&1 &
C=$!
until "$B/tailsweep" submit "$D/spec.yaml" --coordinator "127.0.0.1:$port" \
    > /dev/null 2>&1; do sleep 0.2; done
"$B/tailsweep-worker" --coordinator "127.0.0.1:$port" --work-dir "$D/work" \
  --slots-per-device 2 --exit-when-idle > "$D/worker.log" 2>&1 &
W=$!
sleep 25
before=$(sqlite3 "$D/db" "SELECT COUNT(*) FROM jobs WHERE state='done'")
newest=$(ls "$D/backups" | sort | tail -1)
in_backup=$(sqlite3 "$D/backups/$newest" \
  "SELECT COUNT(*) FROM jobs WHERE state='done'")
kill -9 $C
wait $C 2> /dev/null
rm -f "$D/db" "$D/db-wal" "$D/db-shm"
coordinator --restore-from "$D/backups" --restore-hold "$hold" \
  > "$D/coordinator2.log" 2>&1 &
C=$!
wait $W
after=$(sqlite3 "$D/db" "SELECT COUNT(*) FROM jobs WHERE state='done'")
points=$(sqlite3 "$D/db" "SELECT COUNT(*) FROM metrics WHERE name='loss'")
twice=$(sort "$D/starts.log" | uniq -d | wc -l)
overlaps=$(cat "$D/overlaps.log" 2> /dev/null | wc -l)
kill $C
wait $C 2> /dev/null
echo "--restore-hold $hold: done before the kill $before, in the newest" \
  "backup $in_backup, at the end $after of 200 ($points loss points);" \
  "jobs run twice $twice; runs that found another run of their job alive" \
  "$overlaps ($D)"
