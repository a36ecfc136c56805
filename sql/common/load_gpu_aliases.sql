-- Reference: a GPU name as a source spells it (exact, case-sensitive) -> canonical GPU id.
create or replace table core.gpu_aliases as
select alias, gpu, note from read_csv($path, header = true, all_varchar = true)
