-- What one batch of workloads is ranked by, filled batch of offers by batch (insert_ranking_keys.sql): per ranked
-- offer and cluster choice, its expected total and hours. Narrow, so every offer of a workload fits at once.
create or replace temp table ranking_keys (
    workload varchar,
    cluster_choice varchar,
    expected_total_usd double,
    expected_hours double
);
