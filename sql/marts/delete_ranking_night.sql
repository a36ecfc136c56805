-- Re-publishing the same day replaces that night's rows (its GPU spec sources: delete_ranking_gpu_specs.sql).
delete from marts.gpu_cost_ranking_history where publish_date = $publish_date;
