-- job_list: the distributed jobs of the store (runs.job), with how many runs each holds (views.ranks names them
-- when asked for a job the store does not hold).
-- Columns:
--   job       VARCHAR  -  runs.job
--   runs      BIGINT   -  runs of the job
SELECT job, count(*) AS runs FROM runs WHERE job IS NOT NULL GROUP BY job ORDER BY job
