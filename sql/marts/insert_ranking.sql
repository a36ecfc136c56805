-- One night's GPU cost ranking, one batch of workloads x one batch of offers at a time: every workload x current
-- offer x cluster choice (cheapest | fastest), ranked or with the reason it is not.
-- Inputs: temp tables ranking_candidates (offer_candidates.sql), ranking_terms (ranking_terms.sql), ranking_rungs
-- (ranking_rungs.sql), ranking_picked (ranking_picked.sql) and ranking_key_ranks (ranking_key_ranks.sql: the ranks
-- over every batch of offers of the workloads). $resale_fraction: config/ranking.toml [commitments].
-- Formulas: the marts.* macros (sql/ddl/070_marts_cost_model.sql).
-- The rows leave gpu_spec_source null: the night's spec sources are kept once per GPU
-- (insert_ranking_gpu_specs.sql) and joined where the ranking is published (sql/publish/gpu_cost_ranking_history.sql).
insert into marts.gpu_cost_ranking_history by name
with candidates as (
    select *, coalesce(zone, '') as zone_key from ranking_candidates
),

terms as (
    select * from ranking_terms
),

judged as (
    select * from ranking_rungs
),

picked as (
    select * from ranking_picked
),

key_ranks as (
    select * from ranking_key_ranks
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

choices as (
    -- AL05 waived below: the alias names the values' column, which the select reads through *
    select * from (values ('cheapest'), ('fastest')) as choice (cluster_choice)  -- noqa: AL05
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
        coalesce(telemetry.telemetry_runs_for_gpu, 0) as telemetry_runs_for_gpu,
        key_ranks.rank_by_cost,
        key_ranks.rank_by_time
    from candidates
    inner join terms using (candidate_id)
    cross join choices
    left join picked using (candidate_id, cluster_choice)
    left join judged on candidates.shape_id = judged.shape_id and picked.instances = judged.instances
    -- a ranked choice's ranks (ranking_key_ranks.sql), by the expected total and hours it was ranked by
    left join key_ranks
        on picked.ranked and picked.workload = key_ranks.workload
            and picked.cluster_choice = key_ranks.cluster_choice
            and picked.expected_total_usd is not distinct from key_ranks.expected_total_usd
            and picked.expected_hours is not distinct from key_ranks.expected_hours
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
        -- the expected total at the predicted throughput and at both ends of its interval (marts.offer_total_usd
        -- reads the other inputs from the row, `joined`)
        marts.offer_total_usd(joined, predicted_tokens_per_sec_per_gpu, $resale_fraction::double)
            as expected_total_usd,
        marts.offer_total_usd(joined, predicted_high, $resale_fraction::double) as total_usd_at_high,
        marts.offer_total_usd(joined, predicted_low, $resale_fraction::double) as total_usd_at_low
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
        *,
        $publish_date::date as publish_date,
        $published_at::timestamptz as published_at,
        min_gpus_for_memory is not null and min_instances * gpus_per_instance <= max_gpus as fits_in_memory,
        marts.memory_per_gpu_gb(state_bytes, act_bytes, gpus) as memory_per_gpu_gb
    from noted
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
