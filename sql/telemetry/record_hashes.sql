-- SHA-256 (hex) of each run's normalised contract values as one text (`record_texts` registered by
-- tasks/telemetry/ingest.py::record_hashes): equal hashes = the same record, whatever the file format.
with records as (
    select * from record_texts
),

final as (
    select _row_id, sha256(record_text) as record_hash
    from records
)

select * from final order by _row_id
