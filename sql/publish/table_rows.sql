-- Row counts of the published tables (for the run summary).
select 'gpu_cost_ranking' as table_name, count(*) as row_count from published.gpu_cost_ranking
union all
select 'gpu_cost_ranking_history' as table_name, count(*) as row_count from published.gpu_cost_ranking_history
union all
select 'prices_current' as table_name, count(*) as row_count from published.prices_current
union all
select 'price_history' as table_name, count(*) as row_count from published.price_history
union all
select 'gpu_specs' as table_name, count(*) as row_count from published.gpu_specs
union all
select 'model_versions' as table_name, count(*) as row_count from published.model_versions
union all
select 'quarantine_summary' as table_name, count(*) as row_count from published.quarantine_summary
union all
select 'price_fetch_status' as table_name, count(*) as row_count from published.price_fetch_status;
