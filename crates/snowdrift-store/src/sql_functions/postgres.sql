-- The functions of one generator, as `snowdrift sql install` writes them into PostgreSQL.
-- The names in double braces are filled in by crates/snowdrift-store/src/sql_functions/postgres.rs; every
-- value is a number, an identifier it quoted, or a literal it quoted.
--
-- What keeps IDs unique (docs/src/server/database-ids.md says why each piece is needed):
-- * each worker ID of the block reserved for this database has a counter, a sequence
--   `{{PREFIX}}_wN` holding the generator's compact state (ext | tick | seq) of the last
--   ID issued under it. A sequence is written outside the caller's transaction, so a
--   rollback, a killed session or DISCARD ALL never takes a value back;
-- * the counter is moved only under a transaction-level advisory lock on the worker ID
--   ({{USE}}, N): one transaction at a time issues under a worker ID, whatever the
--   session believes;
-- * each worker ID has a high-water mark, a sequence `{{PREFIX}}_mN` in ms, written a
--   window ahead of the IDs it covers (before them in the WAL), so after a crash (which
--   may lose the counters' last moves) every counter starts above it and the first call
--   waits for the clock to pass it; the unlogged sequence `{{PREFIX}}_life`, which a crash
--   resets, says whether that was done in this life.
-- * which worker ID a session prefers is a session-level advisory lock ({{CLAIM}}, N);
--   it only spreads the sessions over the block, nothing depends on it.

-- Raises unless worker ID `w` is still reserved for this database in the servers'
-- registry table: the reservation is the lease this database holds, checked once a
-- second by each session.
CREATE OR REPLACE FUNCTION {{S}}.{{PREFIX}}_check(w integer) RETURNS void
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  h text;
  until_ms bigint;
BEGIN
  {{CHECK_BODY}}
END
$fn$;

-- The session's worker ID: after a crash first moves every counter above its mark, then
-- takes the worker ID this session held (or a free one), locks it for the transaction
-- and returns the session's state, also kept in the setting snowdrift.{{SLUG}}:
-- [1] the worker's place in the block, [2] the mark (ms) this session last wrote or
-- read for it (IDs up to it are covered), [3] when the next call must take the slow path
-- (ms), [4] when the reservation is checked next, [5] 1 when this session holds the
-- worker's claim, 0 when it borrows it.
CREATE OR REPLACE FUNCTION {{S}}.{{PREFIX}}_take() RETURNS bigint[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  block integer[] := {{BLOCK}};
  seqs regclass[] := {{SEQS}};
  marks regclass[] := {{MARKS}};
  n integer := cardinality(block);
  start_at integer := pg_backend_pid() % cardinality(block);
  prev bigint[] := nullif(current_setting('snowdrift.{{SLUG}}', true), '')::bigint[];
  held integer[];
  tries integer[] := '{}';
  i integer;
  w integer;
  chosen integer;
  claimed integer := 1;
  m bigint;
  top bigint := 0;
  base bigint;
  now_ms bigint;
  st bigint[];
BEGIN
  IF pg_sequence_last_value('{{S}}.{{PREFIX}}_life'::regclass) IS NULL THEN
    -- Fence: one session at a time, the others wait here.
    PERFORM pg_advisory_xact_lock({{FENCE}}, 0);
    IF pg_sequence_last_value('{{S}}.{{PREFIX}}_life'::regclass) IS NULL THEN
      FOR i IN 1 .. n LOOP
        m := pg_sequence_last_value(marks[i]);
        top := greatest(top, m);
        base := (({{EXT}}::bigint << {{TIME_BITS}}) | ((m - {{EPOCH}}) / {{UNIT}} + 1)) << {{SEQ_BITS}};
        IF coalesce(pg_sequence_last_value(seqs[i]), -1) < base THEN
          PERFORM setval(seqs[i], base);
        END IF;
      END LOOP;
      -- The first IDs of this life come after every mark: wait for the clock to pass
      -- them (after a crash, at most a window), as a server waits at start.
      now_ms := {{CLOCK}};
      IF top - now_ms > {{MARK_WAIT_MS}} THEN
        RAISE EXCEPTION USING ERRCODE = 'SDCLK',
          MESSAGE = format('snowdrift_id(%L): the high-water mark of the worker IDs reserved for this database is %s ms ahead of the database clock, more than the %s ms a start waits', {{NAME}}, top - now_ms, {{MARK_WAIT_MS}}),
          HINT = 'the database clock stepped back: fix it (NTP), or wait until it passes the mark';
      END IF;
      IF top >= now_ms THEN
        PERFORM pg_sleep((top - now_ms + 1) / 1000.0);
      END IF;
      PERFORM setval('{{S}}.{{PREFIX}}_life'::regclass, 1);
    END IF;
  END IF;

  -- The claims this session holds (a rolled-back transaction may have taken one the
  -- setting no longer names), the previous worker first, then the block from a place
  -- of this session's own.
  held := ARRAY(
    SELECT l.objid::integer FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.classid = {{CLAIM}}::oid
      AND l.objsubid = 2 AND l.granted AND l.objid::integer = ANY (block));
  IF prev[1] BETWEEN 1 AND n AND block[prev[1]::integer] = ANY (held) THEN
    tries := ARRAY[block[prev[1]::integer]];
  END IF;
  tries := tries || ARRAY(SELECT h FROM unnest(held) h WHERE NOT h = ANY (tries));
  FOR i IN 0 .. n - 1 LOOP
    w := block[(start_at + i) % n + 1];
    IF NOT w = ANY (tries) THEN
      tries := tries || w;
    END IF;
  END LOOP;

  FOREACH w IN ARRAY tries LOOP
    IF w = ANY (held) OR pg_try_advisory_lock({{CLAIM}}, w) THEN
      IF pg_try_advisory_xact_lock({{USE}}, w) THEN
        chosen := w;
        EXIT;
      END IF;
      -- Another transaction issues under it right now (it borrowed it): let it go.
      PERFORM pg_advisory_unlock({{CLAIM}}, w);
      held := array_remove(held, w);
    END IF;
  END LOOP;
  IF chosen IS NULL THEN
    -- Every worker ID is claimed: borrow one whose claimer is between transactions.
    claimed := 0;
    FOREACH w IN ARRAY tries LOOP
      IF pg_try_advisory_xact_lock({{USE}}, w) THEN
        chosen := w;
        EXIT;
      END IF;
    END LOOP;
  END IF;
  IF chosen IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'SDWRK',
      MESSAGE = format('snowdrift_id(%L): all %s worker IDs reserved for this database (%s, of the generator''s %s) are in use by other transactions', {{NAME}}, n, {{BLOCK_TEXT}}, {{SPACE}}),
      HINT = 'run fewer transactions that make IDs at once, or reserve more worker IDs: snowdrift sql uninstall, then snowdrift sql install --workers N';
  END IF;
  FOREACH w IN ARRAY held LOOP
    IF w <> chosen THEN
      PERFORM pg_advisory_unlock({{CLAIM}}, w);
    END IF;
  END LOOP;

  PERFORM {{S}}.{{PREFIX}}_check(chosen);
  now_ms := {{CLOCK}};
  st := ARRAY[array_position(block, chosen), 0, 0, now_ms + {{RECHECK_MS}}, claimed]::bigint[];
  PERFORM set_config('snowdrift.{{SLUG}}', st::text, false);
  RETURN st;
END
$fn$;

-- The slow part of a call: waits for the clock when the counter is ahead of it (a step
-- back, or a full sequence) within the bound, checks the reservation, and writes the
-- mark a window ahead. Returns the counter to issue.
CREATE OR REPLACE FUNCTION {{S}}.{{PREFIX}}_slow(c bigint, now_ms bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  block integer[] := {{BLOCK}};
  marks regclass[] := {{MARKS}};
  s bigint[] := current_setting('snowdrift.{{SLUG}}')::bigint[];
  i integer := s[1];
  t bigint;
  now_t bigint;
  pause bigint;
  need bigint;
  m bigint;
  started bigint := now_ms;
BEGIN
  LOOP
    t := (c >> {{SEQ_BITS}}) & {{TIME_MASK}};
    IF t > {{MAX_TICK}} OR (c >> {{EXT_SHIFT}}) <> {{EXT}} THEN
      RAISE EXCEPTION USING ERRCODE = 'SDTIM',
        MESSAGE = format('snowdrift_id(%L): the layout''s time field is full (its last tick is %s): no ID can be issued', {{NAME}}, {{MAX_TICK}}),
        HINT = 'move the generator to a layout with a later end (snowdrift layout migrate)';
    END IF;
    now_t := CASE WHEN now_ms < {{EPOCH}} THEN -1 ELSE (now_ms - {{EPOCH}}) / {{UNIT}} END;
    EXIT WHEN t <= now_t + {{LEAD_TICKS}};
    -- The counter is ahead of the clock: wait until the clock reaches it, within the
    -- bound; every ID stays above the ones issued before.
    pause := {{EPOCH}} + (t - {{LEAD_TICKS}}) * {{UNIT}} - now_ms;
    IF now_ms + pause - started > {{BACKWARD_MS}} THEN
      RAISE EXCEPTION USING ERRCODE = 'SDCLK',
        MESSAGE = format('snowdrift_id(%L): the database clock is %s ms behind the last ID issued under worker ID %s; a call waits at most %s ms (backward_wait) for it to catch up', {{NAME}}, pause, block[i], {{BACKWARD_MS}}),
        HINT = 'the database clock stepped back: fix it (NTP) and retry; no ID was issued twice';
    END IF;
    PERFORM pg_sleep(pause / 1000.0);
    now_ms := {{CLOCK}};
  END LOOP;

  IF now_ms >= s[4] THEN
    PERFORM {{S}}.{{PREFIX}}_check(block[i]);
    s[4] := now_ms + {{RECHECK_MS}};
  END IF;

  -- Less than half a window left: write the mark a window ahead. Only the transaction
  -- holding the worker's lock moves its mark, and never down.
  need := {{EPOCH}} + (t + 1) * {{UNIT}} - 1;
  IF need > s[2] - {{HALF_WINDOW_MS}} THEN
    m := greatest(now_ms, need) + {{WINDOW_MS}};
    IF coalesce(pg_sequence_last_value(marks[i]), 0) < m THEN
      PERFORM setval(marks[i], m);
    ELSE
      m := pg_sequence_last_value(marks[i]);
    END IF;
    s[2] := m;
  END IF;
  s[3] := least(s[4], s[2] - {{HALF_WINDOW_MS}});
  PERFORM set_config('snowdrift.{{SLUG}}', s::text, false);
  RETURN c;
END
$fn$;

-- One ID: the hot path, one call per row of a column default. (A qualified operator,
-- OPERATOR(pg_catalog.x), has one precedence whatever x is: every expression below is
-- parenthesized.) It runs without
-- `SET search_path` (that clause makes every call save and restore the setting, measured
-- at about 4 µs, as much as the rest of the call), so every function, operator and type
-- in it is schema-qualified: a caller whose search_path puts a schema of its own before
-- pg_catalog (with a nextval() or an operator of its own) changes nothing here. The rare
-- paths it calls (_take, _slow) set their search_path.
CREATE OR REPLACE FUNCTION {{S}}.{{PREFIX}}_id() RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $fn$
DECLARE
  block integer[] := {{BLOCK}};
  seqs pg_catalog.regclass[] := {{SEQS}};
  nodes bigint[] := {{NODES}};
  setting text := pg_catalog.current_setting('snowdrift.{{SLUG}}', true);
  s bigint[];
  i integer;
  c bigint;
  t bigint;
  now_ms bigint;
  now_t bigint;
BEGIN
  IF setting OPERATOR(pg_catalog.<>) '' THEN
    s := setting::bigint[];
  END IF;
  IF s IS NULL OR pg_catalog.pg_try_advisory_xact_lock({{USE}}, block[s[1]::integer]) IS NOT TRUE THEN
    s := {{S}}.{{PREFIX}}_take();
  END IF;
  i := s[1];
  c := pg_catalog.nextval(seqs[i]);
  now_ms := {{CLOCK}};
  now_t := (now_ms OPERATOR(pg_catalog.-) {{EPOCH}}::bigint) OPERATOR(pg_catalog./) {{UNIT}}::bigint;
  t := (c OPERATOR(pg_catalog.>>) {{SEQ_BITS}}) OPERATOR(pg_catalog.&) {{TIME_MASK}}::bigint;
  IF t OPERATOR(pg_catalog.<) now_t THEN
    c := pg_catalog.setval(seqs[i],
      ((c OPERATOR(pg_catalog.>>) {{EXT_SHIFT}}) OPERATOR(pg_catalog.<<) {{EXT_SHIFT}})
      OPERATOR(pg_catalog.|) (now_t OPERATOR(pg_catalog.<<) {{SEQ_BITS}}));
    t := now_t;
  END IF;
  IF now_ms OPERATOR(pg_catalog.>=) s[3]
     OR t OPERATOR(pg_catalog.>) (now_t OPERATOR(pg_catalog.+) {{LEAD_TICKS}}::bigint)
     OR t OPERATOR(pg_catalog.>) {{MAX_TICK}}::bigint
     OR (({{EPOCH}}::bigint OPERATOR(pg_catalog.+) ((t OPERATOR(pg_catalog.+) 1::bigint) OPERATOR(pg_catalog.*) {{UNIT}}::bigint))
         OPERATOR(pg_catalog.-) 1::bigint) OPERATOR(pg_catalog.>) s[2] THEN
    c := {{S}}.{{PREFIX}}_slow(c, now_ms);
  END IF;
  RETURN ((((c OPERATOR(pg_catalog.>>) {{SEQ_BITS}}) OPERATOR(pg_catalog.<<) {{HIGH_SHIFT}})
          OPERATOR(pg_catalog.|) (c OPERATOR(pg_catalog.&) {{SEQ_MASK}}::bigint)) OPERATOR(pg_catalog.<<) {{SEQ_SHIFT}})
         OPERATOR(pg_catalog.|) nodes[i];
END
$fn$;

-- `n` IDs, in order, each run taken with one move of the counter.
CREATE OR REPLACE FUNCTION {{S}}.{{PREFIX}}_ids(n integer) RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  block integer[] := {{BLOCK}};
  seqs regclass[] := {{SEQS}};
  nodes bigint[] := {{NODES}};
  s bigint[];
  i integer;
  c bigint;
  last_c bigint;
  t bigint;
  lim bigint;
  now_ms bigint;
  now_t bigint;
  left_ bigint := n;
BEGIN
  IF n IS NULL OR n < 0 OR n > {{MAX_COUNT}} THEN
    RAISE EXCEPTION USING ERRCODE = '22023',
      MESSAGE = format('snowdrift_ids(%L, %s): the count must be 0 to %s', {{NAME}}, n, {{MAX_COUNT}});
  END IF;
  WHILE left_ > 0 LOOP
    s := nullif(current_setting('snowdrift.{{SLUG}}', true), '')::bigint[];
    IF s IS NULL OR pg_try_advisory_xact_lock({{USE}}, block[s[1]::integer]) IS NOT TRUE THEN
      s := {{S}}.{{PREFIX}}_take();
    END IF;
    i := s[1];
    c := nextval(seqs[i]);
    now_ms := {{CLOCK}};
    now_t := (now_ms - {{EPOCH}}) / {{UNIT}};
    t := (c >> {{SEQ_BITS}}) & {{TIME_MASK}};
    IF t < now_t THEN
      c := setval(seqs[i], ((c >> {{EXT_SHIFT}}) << {{EXT_SHIFT}}) | (now_t << {{SEQ_BITS}}));
      t := now_t;
    END IF;
    IF now_ms >= s[3] OR t > now_t + {{LEAD_TICKS}} OR t > {{MAX_TICK}}
       OR {{EPOCH}} + (t + 1) * {{UNIT}} - 1 > s[2] THEN
      c := {{S}}.{{PREFIX}}_slow(c, now_ms);
      s := current_setting('snowdrift.{{SLUG}}')::bigint[];
      now_ms := {{CLOCK}};
      now_t := (now_ms - {{EPOCH}}) / {{UNIT}};
    END IF;
    -- The run ends with the last tick the clock (and lead) allows and the durable mark
    -- covers.
    lim := least(now_t + {{LEAD_TICKS}}, (s[2] + 1 - {{EPOCH}}) / {{UNIT}} - 1, {{MAX_TICK}});
    last_c := least(c + left_ - 1, ((c >> {{EXT_SHIFT}}) << {{EXT_SHIFT}}) | (lim << {{SEQ_BITS}}) | {{SEQ_MASK}});
    IF last_c > c THEN
      PERFORM setval(seqs[i], last_c);
    ELSE
      last_c := c;
    END IF;
    RETURN QUERY SELECT ((((x >> {{SEQ_BITS}}) << {{HIGH_SHIFT}}) | (x & {{SEQ_MASK}})) << {{SEQ_SHIFT}}) | nodes[i]
      FROM generate_series(c, last_c) x;
    left_ := left_ - (last_c - c + 1);
  END LOOP;
END
$fn$;
