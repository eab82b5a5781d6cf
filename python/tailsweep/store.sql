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
