-- Layers, as in dbt's jaffle_shop: raw (what came in) -> staging -> core -> marts; quarantine beside them.
-- Staging holds one file at a time, inside its ingest's transactions: TEMP tables named staging_* (in memory,
-- spilling to the ingest's temp folder), so a file's intermediate rows are never written to the warehouse file.
create schema if not exists raw;
create schema if not exists core;
create schema if not exists features;
create schema if not exists quarantine;
create schema if not exists marts;
