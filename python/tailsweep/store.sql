-- The store's read rules that the coordinator and the offline Python client
-- both run: coordinator/store_queries.cc compiles this file in
-- (coordinator/store_sql.h), python/tailsweep/_database.py reads it next to
-- itself. One definition: a rule changed here changes both. Each fragment
-- runs from its "-- name: NAME" line to the next one; "--" lines are
-- comments.

-- name: sweep_job_state
-- A sweep's view of a job's state (j: its jobs row, sj: its sweep_jobs
-- row): done and failed as they are; otherwise cancelled when this sweep
-- cancelled it (it may still run for another sweep that shares it), else
-- the job's own state.
(CASE WHEN j.state IN ('done', 'failed') THEN j.state
      WHEN sj.cancelled <> 0 THEN 'cancelled' ELSE j.state END)

-- name: early_stops
-- The runs of the sweep named ?1 that ended before their last step by
-- themselves or by the sweep's stop rule (a result with "early_stop"), and
-- the training steps they did not run: a train result's config steps less
-- its steps_done; a command job's "steps" parameter less the last step it
-- logged (0 when it has no "steps").
SELECT COUNT(*),
       COALESCE(SUM(MAX(
         COALESCE(json_extract(r.result, '$.config.steps'),
                  json_extract(j.params, '$.steps'), 0)
         - COALESCE(json_extract(r.result, '$.steps_done'),
                    (SELECT MAX(m.step) FROM metrics m
                     WHERE m.job_id = r.job_id), 0), 0)), 0)
FROM sweeps s JOIN sweep_jobs sj USING (sweep_id)
     JOIN results r USING (job_id) JOIN jobs j USING (job_id)
WHERE s.name = ?1 AND json_type(r.result) = 'object'
      AND json_extract(r.result, '$.early_stop') IS NOT NULL

-- name: sweep_hours
-- Device time per sweep from its jobs' lease history, kept on each jobs
-- row (gpu_ms, cpu_ms: attempts that ended, each from its lease to its
-- outcome; the live lease from leased_ms to ?1, now in Unix ms): GPU time
-- is time x the job's GPUs on a GPU worker (lease_gpus > 0), CPU time a
-- CPU-only worker's slot time. The preempted columns are the part spent by
-- attempts given back or expired, already in the totals. ?2: one sweep's
-- name, or '' for every sweep. Columns: name, gpu_ms, cpu_ms,
-- preempted_gpu_ms, preempted_cpu_ms (divide by 3600000 for hours).
SELECT s.name,
  SUM(j.gpu_ms + CASE WHEN j.leased_ms IS NOT NULL AND j.lease_gpus > 0
                      THEN MAX(?1 - j.leased_ms, 0) * j.lease_gpus ELSE 0 END),
  SUM(j.cpu_ms + CASE WHEN j.leased_ms IS NOT NULL AND j.lease_gpus = 0
                      THEN MAX(?1 - j.leased_ms, 0) ELSE 0 END),
  SUM(j.preempted_gpu_ms), SUM(j.preempted_cpu_ms)
FROM sweeps s JOIN sweep_jobs sj USING (sweep_id) JOIN jobs j USING (job_id)
WHERE ?2 = '' OR s.name = ?2 GROUP BY s.sweep_id

-- name: job_hours
-- One job's device time as sweep_hours counts it, j its jobs row and ?1
-- now: gpu_ms, cpu_ms.
j.gpu_ms + CASE WHEN j.leased_ms IS NOT NULL AND j.lease_gpus > 0
                THEN MAX(?1 - j.leased_ms, 0) * j.lease_gpus ELSE 0 END,
j.cpu_ms + CASE WHEN j.leased_ms IS NOT NULL AND j.lease_gpus = 0
                THEN MAX(?1 - j.leased_ms, 0) ELSE 0 END
