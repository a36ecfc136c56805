-- Step 1 of dropping the key (DuckDB cannot drop a constraint): the keyed table set aside; the DDL then
-- creates core.telemetry_runs as it is defined today.
alter table core.telemetry_runs rename to telemetry_runs_keyed
