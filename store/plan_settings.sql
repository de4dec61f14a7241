-- plan_settings: settings of a database that plans one-run queries on empty stand-ins (database.plan_runs).
-- Statistics propagation would see the stand-ins are empty and plan every query as an empty result; the plan
-- is then the same as over the files. Set before lock_down.sql.
-- Columns: none (settings).
SET disabled_optimizers = 'statistics_propagation'
