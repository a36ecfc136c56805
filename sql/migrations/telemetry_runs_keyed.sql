-- True when core.telemetry_runs still has the primary key of warehouses made before it was dropped
-- (sql/ddl/040_core_telemetry.sql says why).
select count(*) > 0 as keyed
from duckdb_constraints()
where schema_name = 'core' and table_name = 'telemetry_runs' and constraint_type = 'PRIMARY KEY'
