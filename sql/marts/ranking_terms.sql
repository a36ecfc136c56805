-- Per offer of the batch, narrow: what its cost depends on besides the cluster size (preemption, power, who pays
-- for it). Inputs: temp table ranking_candidates (offer_candidates.sql), registered frame
-- ranking_interruption_rates (provider -> preemptions per instance-hour). Read by ranking_picked.sql and
-- insert_ranking.sql. Formulas: the marts.* macros (sql/ddl/070_marts_cost_model.sql).
create or replace temp table ranking_terms as
with rates as (
    select provider, interruption_rate_per_hour from ranking_interruption_rates
),

-- Measured board power per GPU (marts.power_fraction_of_tdp): the median over the GPU's runs with avg_power_w.
measured_power as (
    select
        runs.gpu,
        median(marts.power_fraction_of_tdp(runs.avg_power_w, specs.tdp_w)) as measured_fraction_of_tdp,
        count(*) as power_runs
    from core.telemetry_runs as runs
    inner join core.gpu_specs as specs on runs.gpu = specs.gpu
    where marts.power_fraction_of_tdp(runs.avg_power_w, specs.tdp_w) is not null
    group by runs.gpu
),

final as (
    select
        candidates.candidate_id,
        candidates.shape_id,
        candidates.workload,
        candidates.pre_reason,
        candidates.token_budget,
        candidates.usd_per_hour,
        candidates.tdp_w,
        candidates.term_hours,
        candidates.checkpoints_kept,
        candidates.checkpoint_gb,
        candidates.storage_usd_per_gb_month,
        marts.interruption_rate_per_hour(
            candidates.pricing, rates.interruption_rate_per_hour, $default_interruption_rate
        ) as interruption_rate_per_hour,
        marts.lost_hours_per_interruption($checkpoint_interval_minutes, $restart_minutes)
            as lost_hours_per_interruption,
        marts.utilisation_of_tdp(measured_power.measured_fraction_of_tdp, $utilisation_of_tdp::double)
            as utilisation_of_tdp,
        case when measured_power.measured_fraction_of_tdp is not null
                then format(
                        'measured: median avg_power_w / tdp_w of {} telemetry run(s) on this GPU',
                        measured_power.power_runs
                    )
            else 'default: config/ranking.toml [energy] utilisation_of_tdp'
        end as utilisation_of_tdp_source,
        marts.pue(
            marts.is_owned(candidates.provider, candidates.electricity_usd_per_kwh), candidates.offer_pue,
            $owned_pue, $cloud_pue
        ) as pue,
        marts.billed_usd_per_kwh(
            marts.is_owned(candidates.provider, candidates.electricity_usd_per_kwh),
            candidates.electricity_usd_per_kwh
        ) as billed_usd_per_kwh,
        $resale_fraction::double as resale_fraction
    from ranking_candidates as candidates
    left join rates on candidates.provider = rates.provider
    left join measured_power on candidates.gpu = measured_power.gpu
)

select * from final;
