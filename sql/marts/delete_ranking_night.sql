-- Re-publishing the same day replaces that night's rows.
delete from marts.gpu_cost_ranking_history where publish_date = $publish_date;
