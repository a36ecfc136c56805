-- The token-efficiency model's only input: feature rows of runs with known throughput (contract 1),
-- in a fixed order so the cross-validation folds are the same for the same data.
with training_runs as (
    select * from features.training_runs
),

final as (
    select * from training_runs
    where tokens_per_sec_per_gpu is not null  -- tokens/s per GPU (the target)
        and quality_flag is null              -- the source doubts the row: reported, not trained on
)

select * from final order by run_id
