create table t(a integer primary key, b text, c real);
with recursive x(i) as (select 1 union all select i+1 from x where i<200000) insert into t select i, hex(i*2654435761 % 4294967296), i*1.5 from x;
create index tb on t(b);
select count(*), sum(c) from t where a % 7 = 3;
select count(*) from t where b like 'A%';
