-- Reference: one row per canonical GPU (data/reference/gpu_specs.csv, sources in its `source` column).
create or replace table core.gpu_specs as
with source as (
    select * from read_csv($path, header = true, all_varchar = true)
),

final as (
    select
        gpu,
        vendor,
        architecture,
        form_factor,
        memory_gb::double as memory_gb,                                  -- GB per GPU
        mem_bandwidth_tbps::double as mem_bandwidth_tbps,                -- TB/s per GPU
        fp16_dense_tflops::double as fp16_dense_tflops,                  -- dense peak TFLOP/s per GPU
        bf16_dense_tflops::double as bf16_dense_tflops,
        fp8_dense_tflops::double as fp8_dense_tflops,
        fp4_dense_tflops::double as fp4_dense_tflops,
        tdp_w::double as tdp_w,                                          -- W per GPU (board power cap)
        interconnect,
        intra_node_bw_gbps_unidir::double as intra_node_bw_gbps_unidir,  -- GB/s per direction
        scale_up_domain_gpus::bigint as scale_up_domain_gpus,  -- GPUs sharing NVLink/xGMI in the default system
        scale_out_gbps_per_gpu::double as scale_out_gbps_per_gpu,        -- default network per GPU, Gb/s
        release_year::integer as release_year,
        source,
        notes
    from source
)

select * from final
