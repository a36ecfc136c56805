-- Layers, as in dbt's jaffle_shop: raw (what came in) -> staging -> core -> marts; quarantine beside them.
create schema if not exists raw;
create schema if not exists staging;
create schema if not exists core;
create schema if not exists features;
create schema if not exists quarantine;
create schema if not exists marts;
