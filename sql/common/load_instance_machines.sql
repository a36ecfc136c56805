-- Reference: the machine behind each GPU instance type (data/reference/instance_machines.csv, sources in its
-- `source` column): GPUs sharing one NVLink/xGMI scale-up domain, and the scale-out network per instance.
create or replace table core.instance_machines as
with source as (
    select * from read_csv($path, header = true, all_varchar = true)
),

final as (
    select
        provider,
        instance_type,
        gpus::double as gpus,                                  -- GPUs per instance (count)
        scale_up_domain_gpus::bigint as scale_up_domain_gpus,  -- GPUs sharing NVLink/xGMI (count)
        scale_up_kind,                                         -- NVLink | xGMI | PCIe | RoCE | none
        network_gbps::double as network_gbps,                  -- Gb/s (gigabits) of scale-out network per instance
        -- EFA | InfiniBand | RoCE | GPUDirect-TCPX(O) | Ethernet
        network_kind,
        source
    from source
)

select * from final
