-- One night's GPU cost ranking: every workload x current offer x cluster choice (cheapest | fastest), ranked
-- or with the reason it is not.
-- Inputs: temp tables ranking_candidates, ranking_ladder (offer_candidates.sql, cluster_ladder.sql),
-- registered frames ranking_predictions (run_id -> champion prediction) and ranking_interruption_rates
-- (provider -> preemptions per instance-hour). $resale_fraction: config/ranking.toml [commitments].
-- Formulas: the marts.* macros (sql/ddl/070_marts_cost_model.sql).
-- The rows leave gpu_spec_source null: the night's spec sources are kept once per GPU
-- (insert_ranking_gpu_specs.sql) and joined where the ranking is published (sql/publish/gpu_cost_ranking_history.sql).
insert into marts.gpu_cost_ranking_history by name
with candidates as (
    select *, coalesce(zone, '') as zone_key from ranking_candidates
),

rates as (
    select provider, interruption_rate_per_hour from ranking_interruption_rates
),

workloads as (
    select workload, token_budget, deadline_hours from ranking_workloads
),

-- Per shape (cluster_ladder.sql): each rung's prediction and hours, the same for every offer of the shape.
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

judged as (
    select *, has_prediction and (deadline_hours is null or hours_to_finish <= deadline_hours) as feasible
    from rungs
),

spot_history as (
    select
        provider, region, coalesce(zone, '') as zone_key, instance_type,
        observed_at,
        usd_per_hour,
        max(observed_at) over (partition by provider, region, coalesce(zone, ''), instance_type) as newest
    from core.price_observations
    where pricing = 'spot'
),

spot_spread as (
    select
        provider, region, zone_key, instance_type,
        median(usd_per_hour) as spot_usd_per_hour_median,
        quantile_cont(usd_per_hour, 0.95) as spot_usd_per_hour_p95,
        count(*) as spot_history_observations
    from spot_history
    where observed_at > newest - to_days($history_window_days::integer)
    group by all
),

telemetry as (
    select gpu, count(*) as telemetry_runs_for_gpu from core.telemetry_runs group by gpu
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

-- Per offer, narrow: what its cost depends on besides the cluster size (preemption, power, who pays for it).
terms as (
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
        arg_min(instances, {
            infeasible: not feasible,
            key: coalesce(
                case when feasible then round(expected_total_usd, 2) else round(hours_to_finish * 3600) end,
                'infinity'::double
            ),
            instances: instances
        }) as cheapest_instances,
        arg_min(instances, {
            seconds: coalesce(round(expected_hours * 3600), 'infinity'::double),
            usd: coalesce(round(expected_total_usd, 2), 'infinity'::double),
            instances: instances
        }) as fastest_instances
    from evaluated
    group by candidate_id
),

choices as (
    -- AL05 waived below: the alias names the values' column, which the select reads through *
    select * from (values ('cheapest'), ('fastest')) as choice (cluster_choice)  -- noqa: AL05
),

-- Ranks over the ranked choices only, on a narrow projection (a window sorts every column it carries): by cost
-- among the offers' cheapest choices, by time among their fastest. A choice is ranked when its rung has a
-- prediction and meets the deadline (rows with a pre_reason have no rungs).
ranks as (
    select
        evaluated.candidate_id,
        choices.cluster_choice,
        case when choices.cluster_choice = 'cheapest' then rank() over (
                    partition by evaluated.workload, choices.cluster_choice
                    order by evaluated.expected_total_usd, evaluated.expected_hours
                )
        end as rank_by_cost,
        case when choices.cluster_choice = 'fastest' then rank() over (
                    partition by evaluated.workload, choices.cluster_choice
                    order by evaluated.expected_hours, evaluated.expected_total_usd
                )
        end as rank_by_time
    from picked
    cross join choices
    inner join evaluated
        on picked.candidate_id = evaluated.candidate_id
            and evaluated.instances = case choices.cluster_choice when 'cheapest' then picked.cheapest_instances
                else picked.fastest_instances
            end
    where evaluated.has_prediction and evaluated.feasible
),

joined as (
    select
        candidates.*,
        terms.interruption_rate_per_hour,
        terms.lost_hours_per_interruption,
        terms.utilisation_of_tdp,
        terms.utilisation_of_tdp_source,
        terms.pue,
        terms.billed_usd_per_kwh,
        terms.resale_fraction,
        marts.is_owned(candidates.provider, candidates.electricity_usd_per_kwh) as is_owned,
        choices.cluster_choice,
        judged.instances,
        judged.gpus,
        judged.has_prediction,
        judged.feasible,
        judged.predicted_tokens_per_sec_per_gpu,
        judged.predicted_low,
        judged.predicted_high,
        judged.extrapolation,
        judged.hours_to_finish,
        coalesce(judged.model_version, $model_version) as model_version,
        spot_spread.spot_usd_per_hour_median,
        spot_spread.spot_usd_per_hour_p95,
        spot_spread.spot_history_observations,
        coalesce(telemetry.telemetry_runs_for_gpu, 0) as telemetry_runs_for_gpu
    from candidates
    inner join terms using (candidate_id)
    cross join choices
    left join picked using (candidate_id)
    left join judged
        on candidates.shape_id = judged.shape_id
            and judged.instances = case choices.cluster_choice when 'cheapest' then picked.cheapest_instances
                else picked.fastest_instances
            end
    left join spot_spread
        on candidates.pricing = 'spot'
            and candidates.provider = spot_spread.provider and candidates.region = spot_spread.region
            and candidates.zone_key = spot_spread.zone_key and candidates.instance_type = spot_spread.instance_type
    left join telemetry on candidates.gpu = telemetry.gpu
),

costed as (
    select
        *,
        marts.instance_usd(instances, usd_per_hour, hours_to_finish, term_hours, $resale_fraction::double)
            as compute_usd,
        marts.expected_interruptions(instances, interruption_rate_per_hour, hours_to_finish)
            as expected_interruptions,
        marts.expected_hours(hours_to_finish, instances, interruption_rate_per_hour, lost_hours_per_interruption)
            as expected_hours,
        marts.expected_total_usd(
            token_budget, predicted_tokens_per_sec_per_gpu, gpus, instances, usd_per_hour,
            interruption_rate_per_hour, lost_hours_per_interruption, tdp_w, utilisation_of_tdp, pue,
            billed_usd_per_kwh, term_hours, $resale_fraction::double, checkpoints_kept, checkpoint_gb,
            storage_usd_per_gb_month
        ) as expected_total_usd,
        marts.expected_total_usd(
            token_budget, predicted_high, gpus, instances, usd_per_hour,
            interruption_rate_per_hour, lost_hours_per_interruption, tdp_w, utilisation_of_tdp, pue,
            billed_usd_per_kwh, term_hours, $resale_fraction::double, checkpoints_kept, checkpoint_gb,
            storage_usd_per_gb_month
        ) as total_usd_at_high,
        marts.expected_total_usd(
            token_budget, predicted_low, gpus, instances, usd_per_hour,
            interruption_rate_per_hour, lost_hours_per_interruption, tdp_w, utilisation_of_tdp, pue,
            billed_usd_per_kwh, term_hours, $resale_fraction::double, checkpoints_kept, checkpoint_gb,
            storage_usd_per_gb_month
        ) as total_usd_at_low
    from joined
),

reasoned as (
    select
        *,
        marts.instance_usd(instances, usd_per_hour, expected_hours, term_hours, resale_fraction)
            as expected_compute_usd,
        marts.energy_kwh(gpus, tdp_w, utilisation_of_tdp, expected_hours, pue) as energy_kwh,
        marts.co2e_kg(marts.energy_kwh(gpus, tdp_w, utilisation_of_tdp, expected_hours, pue), grid_gco2e_per_kwh)
            as co2e_kg,
        marts.co2e_kg_per_mtoken(marts.co2e_kg(marts.energy_kwh(
            gpus, tdp_w, utilisation_of_tdp, expected_hours,
            pue
        ), grid_gco2e_per_kwh), token_budget) as co2e_kg_per_mtoken,
        marts.energy_usd(billed_usd_per_kwh, marts.energy_kwh(gpus, tdp_w, utilisation_of_tdp, expected_hours, pue))
            as energy_usd,
        marts.checkpoint_storage_usd(checkpoints_kept, checkpoint_gb, storage_usd_per_gb_month, expected_hours)
            as checkpoint_storage_usd,
        case when term_hours is not null then marts.billed_term_hours(expected_hours, term_hours) end
            as billed_term_hours,
        marts.break_even_hours(usd_per_hour, term_hours, resale_fraction, on_demand_usd_per_hour)
            as break_even_hours,
        marts.usd_per_mtoken(expected_total_usd, token_budget) as usd_per_mtoken,
        marts.usd_per_mtoken(total_usd_at_high, token_budget) as usd_per_mtoken_low,
        marts.usd_per_mtoken(total_usd_at_low, token_budget) as usd_per_mtoken_high,
        coalesce(
            pre_reason,
            case when not has_prediction then coalesce($no_model_reason, format(
                        'the model gave no throughput for {} on {} GPUs at {}', gpu, gpus::bigint, run_precision
                    ))
            end,
            case when not feasible then format(
                        'cannot finish within {} h with at most {} GPUs: fastest is {:.0f} h on {} GPUs',
                        deadline_hours, max_gpus, hours_to_finish, gpus::bigint
                    )
            end
        ) as not_ranked_reason
    from costed
),

-- Whether a commitment pays for this run: its cost against the same instances on demand for the same hours.
noted as (
    select
        *,
        case
            when term_hours is null or expected_hours is null then null
            when on_demand_usd_per_hour is null
                then
                    'no on-demand price for this instance in this region: break-even unknown'
            when break_even_hours is null or break_even_hours >= term_hours
                then format(
                        'never pays: the {:.0f}-hour term at {:.4f} USD/h costs more than on demand ({:.4f} USD/h) '
                        || 'even if every hour is used', term_hours, usd_per_hour, on_demand_usd_per_hour
                    )
            when expected_compute_usd > marts.instance_usd(instances, on_demand_usd_per_hour, expected_hours, null, 0.0)
                then format(
                        'run too short for the commitment to pay: {:.0f} h of use per instance, break-even {:.0f} h; '
                        || 'on demand costs {:.0f} USD less', expected_hours, break_even_hours,
                        expected_compute_usd
                        - marts.instance_usd(instances, on_demand_usd_per_hour, expected_hours, null, 0.0)
                    )
            else format(
                    'pays: {:.0f} h of use per instance, break-even {:.0f} h; saves {:.0f} USD against on demand',
                    expected_hours, break_even_hours,
                    marts.instance_usd(instances, on_demand_usd_per_hour, expected_hours, null, 0.0)
                    - expected_compute_usd
                )
        end as commitment_note
    from reasoned
),

final as (
    select
        noted.*,
        $publish_date::date as publish_date,
        $published_at::timestamptz as published_at,
        min_gpus_for_memory is not null and min_instances * gpus_per_instance <= max_gpus as fits_in_memory,
        marts.memory_per_gpu_gb(state_bytes, act_bytes, gpus) as memory_per_gpu_gb,
        ranks.rank_by_cost,
        ranks.rank_by_time
    from noted
    left join ranks using (candidate_id, cluster_choice)
)

-- Not sorted: ordering 10^6 wide rows per batch costs more than ranking them (it spills under the memory cap);
-- readers order by rank_by_cost / rank_by_time (sql/offers/offers.sql does).
select
    publish_date,
    published_at,
    workload,
    workload_type,
    token_budget,
    deadline_hours,
    max_gpus,
    provider,
    region,
    zone,
    instance_type,
    pricing,
    gpu,
    gpus_per_instance,
    usd_per_hour,
    usd_per_gpu_hour,
    observed_at,
    run_precision,
    peak_tflops,
    gpu_memory_gb,
    tdp_w,
    model_state_gb,
    activation_gb_per_gpu,
    min_gpus_for_memory,
    fits_in_memory,
    cluster_choice,
    instances,
    gpus,
    scale_up_domain_gpus,
    scale_out_gbps_per_gpu,
    network_kind,
    machine_source,
    memory_per_gpu_gb,
    predicted_tokens_per_sec_per_gpu,
    predicted_low,
    predicted_high,
    extrapolation,
    hours_to_finish,
    compute_usd,
    interruption_rate_per_hour,
    expected_interruptions,
    lost_hours_per_interruption,
    expected_hours,
    expected_compute_usd,
    utilisation_of_tdp,
    utilisation_of_tdp_source,
    pue,
    energy_kwh,
    grid_gco2e_per_kwh,
    co2e_kg,
    co2e_kg_per_mtoken,
    co2e_source,
    electricity_usd_per_kwh,
    energy_usd,
    expected_total_usd,
    usd_per_mtoken,
    usd_per_mtoken_low,
    usd_per_mtoken_high,
    spot_usd_per_hour_median,
    spot_usd_per_hour_p95,
    spot_history_observations,
    rank_by_cost,
    rank_by_time,
    not_ranked_reason,
    telemetry_runs_for_gpu,
    model_version,
    source_file,
    source_line,
    purchase_option,
    offering_class,
    term_hours,
    upfront_usd,
    recurring_usd_per_hour,
    resale_fraction,
    billed_term_hours,
    on_demand_usd_per_hour,
    break_even_hours,
    commitment_note,
    checkpoints_kept,
    checkpoint_gb,
    storage_usd_per_gb_month,
    storage_price_source,
    checkpoint_storage_usd
from final;
