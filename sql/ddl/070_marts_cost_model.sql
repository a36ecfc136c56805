-- The GPU cost model: the ONE place its formulas are written down (memory fit, hours, preemption,
-- energy, commitments, checkpoint storage, dollars per token). sql/marts/*.sql call these macros; every argument is
-- a column of marts.gpu_cost_ranking_history, so a ranking row can be recomputed by hand from its own columns.
--
-- Memory (bytes per GPU, ZeRO-3 / FSDP full sharding over all GPUs of the cluster):
--   per GPU = model_state_bytes / gpus + activation_bytes
--   model_state_bytes, full training (pretrain, sft):
--       params x (weight + gradient + fp32 master + optimizer state bytes per parameter)
--       (ZeRO, Rajbhandari et al. 2020, sec. 3.1: 2 + 2 + 12 = 16 B/param for mixed-precision Adam)
--   lora:  params x lora_weight_bytes (frozen 16-bit base) + adapters x (the same four terms)
--   qlora: params x qlora_weight_bytes (frozen 4-bit NF4 base, 0.5 B) + adapters x (the four terms)
--          (Dettmers et al. 2023, "QLoRA"); adapters = params x adapter_params_fraction
--   activation_bytes (per GPU, not sharded): Korthikanti et al. 2022, "Reducing Activation
--       Recomputation in Large Transformer Models", sec. 4.1: one transformer layer stores
--       s*b*h*(34 + 5*a*s/h) bytes of 16-bit activations without parallelism. Assumed here:
--       flash attention (the 5*a*s/h softmax/dropout term is not materialised), no tensor/sequence
--       parallelism, and full activation checkpointing per layer (sec. 5: only each layer's 2*s*b*h-byte
--       input is kept, and one layer's activations are recomputed at a time in the backward pass):
--       activation_bytes = s*b*h*(2*L + 34)   (s = seq_len, b = micro_batch, h = d_model, L = n_layers)
--   usable bytes per GPU = memory_gb x 1e9 x usable_fraction.
create or replace macro marts.model_state_bytes(
    workload_type, params_b, weight_bytes, grad_bytes, master_weight_bytes, optimizer_bytes,
    adapter_params_fraction, qlora_weight_bytes, lora_weight_bytes
) as
params_b * 1e9 * case workload_type
    when 'qlora'
        then qlora_weight_bytes
            + adapter_params_fraction * (weight_bytes + grad_bytes + master_weight_bytes + optimizer_bytes)
    when 'lora'
        then lora_weight_bytes
            + adapter_params_fraction * (weight_bytes + grad_bytes + master_weight_bytes + optimizer_bytes)
    else weight_bytes + grad_bytes + master_weight_bytes + optimizer_bytes
end;

create or replace macro marts.activation_bytes(seq_len, micro_batch, d_model, n_layers) as
seq_len::double * micro_batch * d_model * (2.0 * n_layers + 34.0);

-- Fewest GPUs whose sharded state plus (unsharded) activations fit; null when activations alone do not.
create or replace macro marts.min_gpus_for_memory(state_bytes, activation_bytes, memory_gb, usable_fraction) as
case when memory_gb * 1e9 * usable_fraction > activation_bytes
        then greatest(1, ceil(state_bytes / (memory_gb * 1e9 * usable_fraction - activation_bytes)))::bigint
end;

create or replace macro marts.memory_per_gpu_gb(state_bytes, activation_bytes, gpus) as
(state_bytes / gpus + activation_bytes) / 1e9;

-- Time and money.
--   hours_to_finish       = token_budget / (tokens/s/GPU x GPUs x 3600)
--   expected_interruptions = instances x interruption_rate_per_hour x hours_to_finish
--                            (synchronous training: any instance's preemption stops the job)
--   lost_hours_per_interruption = checkpoint_interval_minutes / 2 / 60 + restart_minutes / 60
--                            (on average half a checkpoint interval of work is redone, plus the restart)
--   expected_hours        = hours_to_finish + expected_interruptions x lost_hours_per_interruption
--   instance_usd          = instances x usd_per_hour (instance) x hours       (on-demand, spot, owned)
--                         = marts.commitment_run_usd(...)                      (commitments, below)
--   compute_usd           = instance_usd at hours_to_finish; expected_compute_usd at expected_hours
--   energy_kwh            = GPUs x tdp_w x utilisation_of_tdp x expected_hours x pue / 1000
--                            (utilisation_of_tdp: measured power fraction of the GPU, else the default; below)
--   energy_usd            = energy_kwh x electricity_usd_per_kwh for owned GPUs; 0 in the cloud (in the price)
--   expected_total_usd    = instance_usd at expected_hours + energy_usd + checkpoint_storage_usd
--   usd_per_mtoken        = expected_total_usd / (token_budget / 1e6)
--
-- Commitments (pricing reserved_1y | reserved_3y | reserved_5y; prices per instance):
--   term_hours            = term_years x 8760 (365-day years: AWS and Azure divide a term's price by 8760 h a year)
--   usd_per_hour          = upfront_usd / term_hours + recurring_usd_per_hour   (effective over the whole term)
--   billed_term_hours     = ceil(hours / term_hours) x term_hours   (paid whether used or not; a longer run renews)
--   commitment_run_usd    = instances x usd_per_hour
--                           x (billed_term_hours - resale_fraction x (billed_term_hours - hours))
--                           resale_fraction (config/ranking.toml [commitments], default 0): the share of the
--                           unused term recovered (resold, or reused by other work)
--   break_even_hours      = hours of use per instance at which the commitment costs what on-demand costs:
--                           on_demand x h = c x (T - r x (T - h))  ->  h = c x T x (1 - r) / (on_demand - r x c)
--                           (c = usd_per_hour, T = term_hours, r = resale_fraction); null when on_demand <= r x c.
--                           Beyond term_hours the commitment never pays within its term.
--
-- Checkpoint storage (workloads.toml checkpoints_kept; price per GB-month, config/ranking.toml [checkpoints]):
--   checkpoint_bytes      = params x (weight + master weight + optimizer bytes): the saved training state of
--                           the memory model above (gradients are not saved); lora/qlora save the adapters'
--                           state only (params x adapter_params_fraction x the same bytes), not the frozen base
--   checkpoint_storage_usd = checkpoints_kept x checkpoint_bytes / 1e9 x usd_per_gb_month x hours / 730
--                           (730 h = a billed month, 8760 / 12; every kept checkpoint is held the whole run)
create or replace macro marts.hours_to_finish(token_budget, tokens_per_sec_per_gpu, gpus) as
token_budget / (tokens_per_sec_per_gpu * gpus * 3600.0);

-- Preemptions per instance-hour: spot offers at the provider's rate (else the configured default,
-- config/ranking.toml [spot]); on-demand, commitments and owned GPUs are not preempted.
create or replace macro marts.interruption_rate_per_hour(pricing, provider_rate, default_rate) as
case when pricing = 'spot' then coalesce(provider_rate, default_rate) else 0.0 end;

create or replace macro marts.lost_hours_per_interruption(checkpoint_interval_minutes, restart_minutes) as
checkpoint_interval_minutes / 2.0 / 60.0 + restart_minutes / 60.0;

create or replace macro marts.expected_interruptions(instances, interruption_rate_per_hour, hours) as
instances * interruption_rate_per_hour * hours;

create or replace macro marts.expected_hours(
    hours, instances, interruption_rate_per_hour, lost_hours_per_interruption
) as
hours + marts.expected_interruptions(instances, interruption_rate_per_hour, hours) * lost_hours_per_interruption;

-- Board power as a share of TDP (utilisation_of_tdp in energy_kwh): MEASURED where training telemetry of the
-- GPU carries avg_power_w (W per GPU, e.g. the mean of MLflow's system/gpu_*_power_usage_watts over the
-- steady-state steps): each run's avg_power_w / tdp_w, and the GPU's fraction is the median over its runs;
-- elsewhere the configured DEFAULT (config/ranking.toml [energy] utilisation_of_tdp, ~0.9: 86-99% of TDP
-- measured under dense training). The ranking says which it used (utilisation_of_tdp_source).
create or replace macro marts.power_fraction_of_tdp(avg_power_w, tdp_w) as
case when avg_power_w > 0 and tdp_w > 0 then avg_power_w / tdp_w end;

create or replace macro marts.utilisation_of_tdp(measured_fraction, default_fraction) as
coalesce(measured_fraction, default_fraction);

create or replace macro marts.energy_kwh(gpus, tdp_w, utilisation_of_tdp, hours, pue) as
gpus * tdp_w * utilisation_of_tdp * hours * pue / 1000.0;

-- Who pays for power: an owned GPU (provider 'owned', or an offer that names its site's electricity price)
-- at its site's price and PUE (else config/ranking.toml [energy] owned_pue); a cloud offer's price already
-- includes power (0 USD/kWh billed, cloud_pue only for the reported energy).
create or replace macro marts.is_owned(provider, electricity_usd_per_kwh) as
provider = 'owned' or electricity_usd_per_kwh is not null;

create or replace macro marts.pue(is_owned, offer_pue, owned_pue, cloud_pue) as
case when is_owned then coalesce(offer_pue, owned_pue) else cloud_pue end;

create or replace macro marts.billed_usd_per_kwh(is_owned, electricity_usd_per_kwh) as
case when is_owned then coalesce(electricity_usd_per_kwh, 0.0) else 0.0 end;

-- cloud offers bill no energy (0 USD/kWh): a GPU without tdp_w must not turn their cost null
create or replace macro marts.energy_usd(billed_usd_per_kwh, energy_kwh) as
case when billed_usd_per_kwh = 0 then 0.0 else billed_usd_per_kwh * energy_kwh end;

create or replace macro marts.term_hours(term_years) as
term_years * 8760.0;

create or replace macro marts.commitment_usd_per_hour(upfront_usd, recurring_usd_per_hour, term_hours) as
coalesce(upfront_usd, 0.0) / term_hours + coalesce(recurring_usd_per_hour, 0.0);

create or replace macro marts.billed_term_hours(hours, term_hours) as
ceil(hours / term_hours) * term_hours;

create or replace macro marts.commitment_run_usd(instances, usd_per_hour, hours, term_hours, resale_fraction) as
instances * usd_per_hour * (
    marts.billed_term_hours(hours, term_hours)
    - resale_fraction * (marts.billed_term_hours(hours, term_hours) - hours)
);

create or replace macro marts.break_even_hours(usd_per_hour, term_hours, resale_fraction, on_demand_usd_per_hour) as
case when on_demand_usd_per_hour > resale_fraction * usd_per_hour
        then usd_per_hour
            * term_hours
            * (1.0 - resale_fraction)
            / (on_demand_usd_per_hour - resale_fraction * usd_per_hour)
end;

-- What the instances cost for `hours` of use: pro rata, or the whole (renewed) term for a commitment.
create or replace macro marts.instance_usd(instances, usd_per_hour, hours, term_hours, resale_fraction) as
case when term_hours is null then instances * usd_per_hour * hours
    else marts.commitment_run_usd(instances, usd_per_hour, hours, term_hours, resale_fraction)
end;

create or replace macro marts.checkpoint_bytes(
    workload_type, params_b, weight_bytes, master_weight_bytes, optimizer_bytes, adapter_params_fraction
) as
params_b * 1e9 * (weight_bytes + master_weight_bytes + optimizer_bytes)
* case when workload_type in ('lora', 'qlora') then adapter_params_fraction else 1.0 end;

create or replace macro marts.checkpoint_storage_usd(checkpoints_kept, checkpoint_gb, usd_per_gb_month, hours) as
checkpoints_kept * checkpoint_gb * usd_per_gb_month * hours / 730.0;

-- The whole bill for `hours` of use: instances + billed energy + checkpoint storage.
create or replace macro marts.total_usd(
    hours, gpus, instances, usd_per_hour, tdp_w, utilisation_of_tdp, pue, billed_usd_per_kwh,
    term_hours, resale_fraction, checkpoints_kept, checkpoint_gb, storage_usd_per_gb_month
) as
marts.instance_usd(instances, usd_per_hour, hours, term_hours, resale_fraction)
+ marts.energy_usd(billed_usd_per_kwh, marts.energy_kwh(gpus, tdp_w, utilisation_of_tdp, hours, pue))
+ marts.checkpoint_storage_usd(checkpoints_kept, checkpoint_gb, storage_usd_per_gb_month, hours);

create or replace macro marts.expected_total_usd(
    token_budget, tokens_per_sec_per_gpu, gpus, instances, usd_per_hour, interruption_rate_per_hour,
    lost_hours_per_interruption, tdp_w, utilisation_of_tdp, pue, billed_usd_per_kwh,
    term_hours, resale_fraction, checkpoints_kept, checkpoint_gb, storage_usd_per_gb_month
) as
marts.total_usd(
    marts.expected_hours(
        marts.hours_to_finish(token_budget, tokens_per_sec_per_gpu, gpus), instances,
        interruption_rate_per_hour, lost_hours_per_interruption
    ),
    gpus, instances, usd_per_hour, tdp_w, utilisation_of_tdp, pue, billed_usd_per_kwh,
    term_hours, resale_fraction, checkpoints_kept, checkpoint_gb, storage_usd_per_gb_month
);

-- expected_total_usd of an offer's ranking row (sql/marts/insert_ranking.sql: `offer` is its row, read by these
-- column names) at a throughput, tokens/s per GPU: the ranking prices each offer at its predicted throughput and at
-- both ends of the interval, all else equal.
create or replace macro marts.offer_total_usd(offer, tokens_per_sec_per_gpu, resale_fraction) as
marts.expected_total_usd(
    offer.token_budget, tokens_per_sec_per_gpu, offer.gpus, offer.instances, offer.usd_per_hour,
    offer.interruption_rate_per_hour, offer.lost_hours_per_interruption, offer.tdp_w, offer.utilisation_of_tdp,
    offer.pue, offer.billed_usd_per_kwh, offer.term_hours, resale_fraction, offer.checkpoints_kept,
    offer.checkpoint_gb, offer.storage_usd_per_gb_month
);

create or replace macro marts.usd_per_mtoken(usd, token_budget) as
usd / (token_budget / 1e6);

-- The machine a cluster runs on (data/reference/instance_machines.csv; config/ranking.toml [machines]):
--   scale_up_domain_gpus   = GPUs sharing NVLink/xGMI: the listed value, else the instance's whole GPUs (a VM
--                            with fewer GPUs than a node shares no fabric beyond itself)
--   scale_out_gbps_per_gpu = the instance's scale-out network (Gb/s, gigabits) / its GPUs, else the default
--   a run of `gpus` GPUs sees min(scale_up_domain_gpus, gpus) GPUs in one domain
create or replace macro marts.scale_up_domain_gpus(listed_domain_gpus, gpus_per_instance) as
coalesce(listed_domain_gpus, greatest(floor(gpus_per_instance), 1))::bigint;

create or replace macro marts.scale_out_gbps_per_gpu(network_gbps, gpus_per_instance, default_gbps_per_gpu) as
coalesce(network_gbps / greatest(gpus_per_instance, 1), default_gbps_per_gpu);

create or replace macro marts.run_scale_up_domain_gpus(scale_up_domain_gpus, gpus) as
least(scale_up_domain_gpus, gpus)::bigint;

-- Carbon (operational only: embodied carbon of the hardware is out of scope):
--   co2e_kg            = energy_kwh x grid_gco2e_per_kwh / 1000   (location-based grid intensity of the region)
--   co2e_kg_per_mtoken = co2e_kg / (token_budget / 1e6)
create or replace macro marts.co2e_kg(energy_kwh, grid_gco2e_per_kwh) as
energy_kwh * grid_gco2e_per_kwh / 1000.0;

create or replace macro marts.co2e_kg_per_mtoken(co2e_kg, token_budget) as
co2e_kg / (token_budget / 1e6);
