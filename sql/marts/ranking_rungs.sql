-- Per shape (cluster_ladder.sql): each rung's prediction and hours, the same for every offer of the shape, and
-- whether it meets the deadline. Inputs: temp table ranking_ladder, registered frames ranking_workloads and
-- ranking_predictions (run_id -> champion prediction). Read by ranking_picked.sql and insert_ranking.sql.
-- Formulas: the marts.* macros (sql/ddl/070_marts_cost_model.sql).
create or replace temp table ranking_rungs as
with workloads as (
    select workload, token_budget, deadline_hours from ranking_workloads
),

rungs as (
    select
        ladder.shape_id,
        ladder.instances,
        ladder.gpus,
        predictions.predicted_tokens_per_sec_per_gpu,
        predictions.predicted_low,
        predictions.predicted_high,
        predictions.extrapolation,
        predictions.model_version,
        coalesce(predictions.predicted_tokens_per_sec_per_gpu, 0) > 0 as has_prediction,
        marts.hours_to_finish(workloads.token_budget, predictions.predicted_tokens_per_sec_per_gpu, ladder.gpus)
            as hours_to_finish,
        workloads.deadline_hours
    from ranking_ladder as ladder
    inner join workloads using (workload)
    left join ranking_predictions as predictions using (run_id)
),

final as (
    select *, has_prediction and (deadline_hours is null or hours_to_finish <= deadline_hours) as feasible
    from rungs
)

select * from final;
