#!/bin/sh
# Runs inside the image's root, as a non-root uid, root file system read-only.
set -eu
echo "inside: worker --devices ${DEVICES:-auto}"
echo "inside: $(id)"
echo "inside: / is $(awk '$2 == "/" {print $4}' /proc/mounts | cut -d, -f1 | tail -n1)"
touch /opt/x 2> /dev/null && echo "inside: / writable?!" || echo "inside: cannot write /opt (good)"
/opt/tailsweep/bin/tailsweep --version
cd /tmp
tailsweep-coordinator --db /tmp/s.db --data-dir /tmp/d --listen 127.0.0.1:50691 \
  --http-listen 127.0.0.1:50692 2> /tmp/coordinator.log &
coordinator=$!
tailsweep-worker --coordinator 127.0.0.1:50691 --devices ${DEVICES:-auto} --work-dir /tmp/w 2> /tmp/worker.log &
worker=$!
cat > /tmp/job.sh << 'JOB'
#!/bin/sh
x=$(tr -d ' \n' < "$TAILSWEEP_PARAMS_FILE" | sed 's/.*"x":\([0-9]*\).*/\1/')
for step in 1 2 3; do
  echo "{\"step\": $step, \"loss\": $((x * step))}" >> "$TAILSWEEP_METRICS_FILE"
done
JOB
chmod +x /tmp/job.sh
cat > /tmp/spec.yaml << 'SPEC'
name: imagecheck
kind: command
command: [/tmp/job.sh]
grid:
  x: [1, 2, 3, 4]
SPEC
i=0
until tailsweep submit /tmp/spec.yaml --coordinator 127.0.0.1:50691 > /tmp/submit.log 2>&1; do
  i=$((i + 1)); [ $i -lt 100 ] || { cat /tmp/submit.log; kill $worker $coordinator; exit 1; }; sleep 0.1
done
cat /tmp/submit.log
rc=0
python3 -c 'import os, tailsweep; s=tailsweep.Client("http://127.0.0.1:50692").sweep("imagecheck"); s.wait(poll=0.2, timeout=float(os.environ.get("SWEEP_TIMEOUT", "120"))); r=s.results(output="records"); print(r); l=sorted(x["summary.loss.last"] for x in r); print("losses:", l); assert l == [3, 6, 9, 12], l' || rc=$?
[ -s /tmp/worker.log ] && { echo "--- worker.log (head)"; head -5 /tmp/worker.log; }
grep -o -- "--devices auto: .*" /tmp/worker.log | head -n1 || true
kill "$worker" "$coordinator" 2> /dev/null || true
wait || true
[ $rc -eq 0 ] || { echo "--- coordinator.log"; tail -20 /tmp/coordinator.log; echo "--- worker.log"; tail -20 /tmp/worker.log; }
echo "inside: sweep rc=$rc"
exit $rc
