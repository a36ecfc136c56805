-- Per offer of the batch and cluster choice (cheapest | fastest): the rung it runs on, with the expected total and
-- hours it is ranked by, and whether it is ranked (the rung has a prediction and meets the deadline). Offers with a
-- pre_reason have no rungs, so no rows. Inputs: temp tables ranking_terms, ranking_rungs. Read by
-- insert_ranking_keys.sql (the ranks, over every batch of offers) and insert_ranking.sql (the rows).
-- Formulas: the marts.* macros (sql/ddl/070_marts_cost_model.sql).
create or replace temp table ranking_picked as
with terms as (
    select * from ranking_terms
),

judged as (
    select * from ranking_rungs
),

-- Every rung of every rankable offer, on a narrow projection: its expected hours and total (the same macros as
-- the published row), to pick the offer's two cluster sizes.
evaluated as (
    select
        terms.candidate_id,
        terms.workload,
        judged.instances,
        judged.has_prediction,
        judged.feasible,
        judged.hours_to_finish,
        marts.expected_hours(
            judged.hours_to_finish, judged.instances, terms.interruption_rate_per_hour,
            terms.lost_hours_per_interruption
        ) as expected_hours,
        marts.expected_total_usd(
            terms.token_budget, judged.predicted_tokens_per_sec_per_gpu, judged.gpus,
            judged.instances, terms.usd_per_hour, terms.interruption_rate_per_hour,
            terms.lost_hours_per_interruption, terms.tdp_w, terms.utilisation_of_tdp, terms.pue,
            terms.billed_usd_per_kwh, terms.term_hours, terms.resale_fraction, terms.checkpoints_kept,
            terms.checkpoint_gb, terms.storage_usd_per_gb_month
        ) as expected_total_usd
    from terms
    inner join judged using (shape_id)
    where terms.pre_reason is null
),

-- cheapest: the lowest expected total among the rungs that meet the deadline (else the fastest rung, kept with
-- the reason); fastest: the lowest expected hours within max_gpus. Compared to the cent and to the second (sizes
-- equal to rounding are ties); ties go to the cheaper, then to the fewer instances.
picked as (
    select
        candidate_id,
        workload,
        arg_min({
            instances: instances,
            expected_total_usd: expected_total_usd,
            expected_hours: expected_hours,
            ranked: has_prediction and feasible
        }, {
            infeasible: not feasible,
            key: coalesce(
                case when feasible then round(expected_total_usd, 2) else round(hours_to_finish * 3600) end,
                'infinity'::double
            ),
            instances: instances
        }) as cheapest,
        arg_min({
            instances: instances,
            expected_total_usd: expected_total_usd,
            expected_hours: expected_hours,
            ranked: has_prediction and feasible
        }, {
            seconds: coalesce(round(expected_hours * 3600), 'infinity'::double),
            usd: coalesce(round(expected_total_usd, 2), 'infinity'::double),
            instances: instances
        }) as fastest
    from evaluated
    group by candidate_id, workload
),

final as (
    select
        picked.candidate_id,
        picked.workload,
        'cheapest' as cluster_choice,
        picked.cheapest.instances,
        picked.cheapest.expected_total_usd,
        picked.cheapest.expected_hours,
        picked.cheapest.ranked
    from picked
    union all
    select
        picked.candidate_id,
        picked.workload,
        'fastest' as cluster_choice,
        picked.fastest.instances,
        picked.fastest.expected_total_usd,
        picked.fastest.expected_hours,
        picked.fastest.ranked
    from picked
)

select * from final;
