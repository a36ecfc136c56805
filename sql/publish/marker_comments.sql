-- What the marker table is, in the database itself (sql/publish/marker.sql).
comment on table published.gpucost_publication is 'The mark of a database gpucost published: gpucost publish replaces an existing published file only when it carries this table (or is the file gpucost last wrote there); one row';
comment on column published.gpucost_publication.product is 'Always gpucost';
comment on column published.gpucost_publication.published_at is 'When this file was published (UTC)';
