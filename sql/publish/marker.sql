-- The mark of a database gpucost published: publish replaces an existing target only when it carries this table
-- (tasks/publishing/ownership.py). One row.
create table published.gpucost_publication as
with final as (
    select
        'gpucost' as product,
        $published_at::timestamptz as published_at   -- UTC
)

select * from final;
