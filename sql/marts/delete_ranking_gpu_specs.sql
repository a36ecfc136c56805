-- Re-publishing the same day replaces that night's GPU spec sources.
delete from marts.gpu_cost_ranking_gpu_specs where publish_date = $publish_date;
