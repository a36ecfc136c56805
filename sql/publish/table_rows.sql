-- Row counts of the published tables (for the run summary).
select 'gpu_cost_ranking' as table_name, count(*) as row_count from published.gpu_cost_ranking
union all select 'gpu_cost_ranking_history', count(*) from published.gpu_cost_ranking_history
union all select 'prices_current', count(*) from published.prices_current
union all select 'price_history', count(*) from published.price_history
union all select 'gpu_specs', count(*) from published.gpu_specs
union all select 'model_versions', count(*) from published.model_versions
union all select 'quarantine_summary', count(*) from published.quarantine_summary
union all select 'price_fetch_status', count(*) from published.price_fetch_status;
