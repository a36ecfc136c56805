-- Where the reference tables the features join are loaded (core.gpu_specs, core.gpu_aliases), for an in-memory
-- database that has no warehouse layers (a prediction; in the warehouse sql/ddl/000_schemas.sql makes it with them).
create schema if not exists core;
