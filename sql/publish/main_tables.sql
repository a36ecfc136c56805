-- The tables of a database's main schema (does it carry gpucost's publication marker?).
select table_name from information_schema.tables where table_schema = 'main'
