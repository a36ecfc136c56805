-- Every current offer of one batch ($offer_batch, ranking_offers.sql) x every workload, with its memory fit and
-- the first reason (if any) it cannot be ranked before throughput is predicted. `ranking_workloads` is registered
-- by tasks/ranking/rank.py (config/workloads.toml with the byte sizes of config/ranking.toml resolved; one batch of
-- workloads at a time). $gpu_specs_file: the specs file config/settings.toml [reference] names. $publish_date and
-- $max_price_age_days (config/ranking.toml [prices]) mark stale offers. `ranking_storage_prices`
-- (config/ranking.toml [checkpoints]: provider, the price-list storage type to use, the configured USD per
-- GB-month) and $default_storage_usd_per_gb_month price checkpoint storage where the price lists do not.
-- core.instance_machines (data/reference/instance_machines.csv) gives the machine: GPUs sharing NVLink/xGMI and
-- the scale-out network; an instance type without a row: its GPUs, and $default_scale_out_gbps_per_gpu
-- (config/ranking.toml [machines]). core.region_carbon (data/reference/region_carbon.csv) gives the grid's
-- carbon intensity; owned offers take theirs from `ranking_owned_carbon` (config/ranking.toml [carbon]).
-- Formulas: 070 macros.
create or replace temp table ranking_candidates as
with offers as (
    select * exclude (offer_batch) from ranking_offers where offer_batch = $offer_batch::ubigint
),

specs as (
    select * from core.gpu_specs
),

workloads as (
    select * from ranking_workloads
),

-- The same instance on demand, for a commitment's break-even: the region-wide price where there is one,
-- else the cheapest zone's.
on_demand as (
    select
        provider,
        region,
        instance_type,
        coalesce(min(usd_per_hour) filter (where zone is null), min(usd_per_hour)) as on_demand_usd_per_hour
    from ranking_offers  -- every batch's: an offer's on-demand twin may be in another batch
    where pricing = 'on_demand'
    group by provider, region, instance_type
),

storage_config as (
    select provider, storage_type, usd_per_gb_month from ranking_storage_prices
),

machines as (
    select * from core.instance_machines
),

carbon as (
    select provider, region, grid_gco2e_per_kwh, format('{} ({})', source, year) as co2e_source
    from core.region_carbon
    union all
    select
        'owned' as provider, region, grid_gco2e_per_kwh,
        'config/ranking.toml [carbon] owned_gco2e_per_kwh' as co2e_source
    from ranking_owned_carbon
),

storage_listed as (
    select listed.provider, listed.region, listed.usd_per_gb_month, listed.source_file
    from core.storage_prices_current as listed
    inner join storage_config
        on listed.provider = storage_config.provider and listed.storage_type = storage_config.storage_type
),

joined as (
    select
        workloads.* exclude (description),
        offers.provider,
        offers.region,
        offers.zone,
        offers.instance_type,
        offers.pricing,
        offers.gpu,
        offers.gpu_count as gpus_per_instance,
        offers.usd_per_hour,
        offers.usd_per_gpu_hour,
        offers.observed_at,
        offers.source_file,
        offers.source_line,
        offers.electricity_usd_per_kwh,
        offers.pue as offer_pue,
        offers.term_hours,
        offers.upfront_usd,
        offers.recurring_usd_per_hour,
        offers.purchase_option,
        offers.offering_class,
        on_demand.on_demand_usd_per_hour,
        coalesce(
            storage_listed.usd_per_gb_month, storage_config.usd_per_gb_month,
            $default_storage_usd_per_gb_month::double
        ) as storage_usd_per_gb_month,
        case when storage_listed.usd_per_gb_month is not null then 'price list: ' || storage_listed.source_file
            else 'config/ranking.toml [checkpoints]'
        end as storage_price_source,
        marts.scale_up_domain_gpus(machines.scale_up_domain_gpus, offers.gpu_count) as scale_up_domain_gpus,
        marts.scale_out_gbps_per_gpu(machines.network_gbps, offers.gpu_count, $default_scale_out_gbps_per_gpu::double)
            as scale_out_gbps_per_gpu,
        coalesce(machines.network_kind, 'unknown') as network_kind,
        case
            when machines.network_gbps is not null then 'data/reference/instance_machines.csv: ' || machines.source
            when machines.provider is not null
                then
                    'network defaulted (config/ranking.toml [machines]); data/reference/instance_machines.csv: '
                    || machines.source
            else 'defaulted: not in data/reference/instance_machines.csv; scale-up domain = the instance''s GPUs, '
                || 'network = config/ranking.toml [machines] default_scale_out_gbps_per_gpu'
        end as machine_source,
        carbon.grid_gco2e_per_kwh,
        coalesce(carbon.co2e_source, format(
            'no grid carbon intensity for {} {} (data/reference/region_carbon.csv{})',
            offers.provider, offers.region,
            case when offers.provider = 'owned' then ', config/ranking.toml [carbon] owned_gco2e_per_kwh' else '' end
        ))
            as co2e_source,
        specs.gpu is not null as has_spec,
        specs.memory_gb as gpu_memory_gb,
        specs.tdp_w,
        dense_peak_tflops(
            workloads.precision, specs.fp16_dense_tflops, specs.bf16_dense_tflops,
            specs.fp8_dense_tflops, specs.fp4_dense_tflops
        ) as native_peak_tflops,
        dense_peak_tflops(
            workloads.fallback_precision, specs.fp16_dense_tflops, specs.bf16_dense_tflops,
            specs.fp8_dense_tflops, specs.fp4_dense_tflops
        ) as fallback_peak_tflops
    from workloads
    cross join offers
    left join specs on offers.gpu = specs.gpu
    left join on_demand
        on offers.provider = on_demand.provider and offers.region = on_demand.region
            and offers.instance_type = on_demand.instance_type
    left join machines on offers.provider = machines.provider and offers.instance_type = machines.instance_type
    left join carbon on offers.provider = carbon.provider and offers.region = carbon.region
    left join storage_config on offers.provider = storage_config.provider
    left join storage_listed on offers.provider = storage_listed.provider and offers.region = storage_listed.region
),

memory as (
    select
        *,
        case when native_peak_tflops is not null then precision
            when fallback_peak_tflops is not null then fallback_precision
        end as run_precision,
        coalesce(native_peak_tflops, fallback_peak_tflops) as peak_tflops,
        marts.model_state_bytes(
            workload_type, params_b, weight_bytes, grad_bytes, master_weight_bytes,
            optimizer_bytes, adapter_params_fraction, qlora_weight_bytes, lora_weight_bytes
        ) as state_bytes,
        marts.activation_bytes(seq_len, micro_batch, d_model, n_layers) as act_bytes,
        marts.checkpoint_bytes(
            workload_type, params_b, weight_bytes, master_weight_bytes, optimizer_bytes,
            adapter_params_fraction
        ) / 1e9 as checkpoint_gb
    from joined
),

sized as (
    select
        *,
        marts.min_gpus_for_memory(state_bytes, act_bytes, gpu_memory_gb, usable_fraction) as min_gpus_for_memory
    from memory
),

instances as (
    select
        *,
        ceil(min_gpus_for_memory / gpus_per_instance)::bigint as min_instances
    from sized
),

-- The shape (cluster_ladder.sql): what the ladder and the throughput model see, the same for every offer of it.
shaped as (
    select
        *,
        hash(
            workload, gpu, run_precision, gpus_per_instance, min_instances, scale_up_domain_gpus,
            scale_out_gbps_per_gpu
        ) as shape_id
    from instances
),

final as (
    select
        *,
        row_number() over () as candidate_id,
        state_bytes / 1e9 as model_state_gb,
        act_bytes / 1e9 as activation_gb_per_gpu,
        case
            when observed_at::date < $publish_date::date - $max_price_age_days::integer
                then
                    format(
                        'stale price: last observed {} ({} days before this night; the limit is {} days, '
                        || 'config/ranking.toml [prices])', observed_at::date,
                        date_diff('day', observed_at::date, $publish_date::date), $max_price_age_days
                    )
            when not has_spec
                then
                    format('no row for GPU {} in gpu_specs ({}): cannot size or predict', gpu, $gpu_specs_file)
            when gpus_per_instance < 1
                then
                    format(
                        'partitioned GPU ({} of a {}): throughput is modelled for whole GPUs', gpus_per_instance, gpu
                    )
            when providers is not null and not list_contains(providers, provider)
                then
                    format('provider {} is not in the workload''s providers', provider)
            when regions is not null and not list_contains(regions, region)
                then
                    format('region {} is not in the workload''s regions', region)
            when pricing = 'spot' and not spot_allowed then 'spot offers excluded (spot_allowed = false)'
            when marts.is_owned(provider, electricity_usd_per_kwh) and tdp_w is null
                then
                    format('owned {} has no tdp_w in gpu_specs: its energy cannot be costed', gpu)
            when run_precision is null
                then
                    format('{} has no dense peak for {} (nor {}) in gpu_specs', gpu, precision, fallback_precision)
            when min_gpus_for_memory is null
                then
                    format(
                        'does not fit: activations alone ({:.1f} GB per GPU) exceed {:.1f} GB usable of {} GB',
                        act_bytes / 1e9, gpu_memory_gb * usable_fraction, gpu_memory_gb
                    )
            when min_instances * gpus_per_instance > max_gpus then
                format(
                    'does not fit: needs {} GPUs ({} x {}-GPU instances) to hold {:.0f} GB of model state '
                    || 'plus {:.1f} GB activations per GPU in {} GB cards; max_gpus is {}',
                    (min_instances * gpus_per_instance)::bigint, min_instances, gpus_per_instance::bigint,
                    state_bytes / 1e9, act_bytes / 1e9, gpu_memory_gb, max_gpus
                )
        end as pre_reason
    from shaped
)

select * from final;
