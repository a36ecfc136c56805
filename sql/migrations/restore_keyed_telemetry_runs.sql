-- Step 2 of dropping the key: the set-aside rows into the table the DDL created, then the old table dropped.
insert into core.telemetry_runs by name
select * from core.telemetry_runs_keyed;

drop table core.telemetry_runs_keyed
