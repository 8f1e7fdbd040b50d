-- The functions of one generator, as `snowdrift sql install` writes them into MariaDB.
-- The names in double braces are filled in by crates/snowdrift-store/src/sql_functions/mariadb.rs;
-- every value is a number, an identifier it checked, or a literal it quoted. Statements
-- are separated by lines holding only `-- ;;` (a function body holds `;`).
--
-- A function's result is taken with SET, never DO: DO turns the error a function raises
-- into a warning and goes on.
--
-- What keeps IDs unique (docs/src/server/database-ids.md says why each piece is needed):
-- * each worker ID of the block reserved for this database has a row in the MEMORY table
--   {{PREFIX}}_lease: the session leasing it (its CONNECTION_ID), until when (ms, the
--   database clock), its counter, the generator's compact state (ext | tick | seq) of
--   the last ID issued under it, the mark as last written (never above the durable one)
--   and when the reservation is next checked. A MEMORY table is not transactional: a
--   rollback or a killed session never takes a write back. Only these functions write it
--   (callers have EXECUTE alone): what a session keeps in user variables, which it can
--   set by hand, is only which worker ID it leased, and the UPDATE checks that;
-- * a session is alive while it holds the user-level lock snowdrift:<CONNECTION_ID>
--   (GET_LOCK, released when the session ends): unlike the processlist, IS_USED_LOCK
--   shows every user's sessions, whatever the functions' definer may see;
-- * every ID is one UPDATE of the row, only by the session whose lease has not ended,
--   which moves the counter up and renews the lease; a session whose lease ended (or was
--   taken) leases again before its next ID;
-- * each worker ID's high-water mark is a row of the Aria table {{PREFIX}}_mark
--   (crash-safe, no rollback takes it back), written a window ahead of the IDs it covers; a restart
--   empties the MEMORY table, and a worker ID's row comes back with its counter above the
--   mark.
-- ;;
CREATE OR REPLACE FUNCTION {{PREFIX}}_now() RETURNS BIGINT NOT DETERMINISTIC NO SQL SQL SECURITY DEFINER
RETURN {{CLOCK}}
-- ;;
-- Raises unless worker ID `w` is still reserved for this database in the servers'
-- registry table: the reservation is the lease this database holds there.
CREATE OR REPLACE FUNCTION {{PREFIX}}_check(w INT) RETURNS INT NOT DETERMINISTIC READS SQL DATA SQL SECURITY DEFINER
BEGIN
  {{CHECK_BODY}}
  RETURN 1;
END
-- ;;
-- Leases a worker ID of the block to this session: the one it held, else one that is
-- free, whose lease ended, or whose session is gone; returns it. A worker ID whose row a
-- restart removed comes back above its mark; taking a worker ID waits for the clock to
-- pass its counter, up to max_mark_wait, as a server waits for a mark it takes over.
CREATE OR REPLACE FUNCTION {{PREFIX}}_take(now_ms BIGINT) RETURNS INT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE done INT;
  DECLARE w INT DEFAULT NULL;
  DECLARE c BIGINT;
  DECLARE pause BIGINT;
  DECLARE slept INT;
  IF NOT (IS_USED_LOCK(CONCAT('snowdrift:', CONNECTION_ID())) <=> CONNECTION_ID()) THEN
    DO GET_LOCK(CONCAT('snowdrift:', CONNECTION_ID()), 0);
  END IF;
  IF (SELECT COUNT(*) FROM {{PREFIX}}_lease) < {{N}} THEN
    INSERT IGNORE INTO {{PREFIX}}_lease (worker_id, holder, expires_ms, counter, mark_ms, check_ms)
      SELECT m.worker_id, NULL, 0, ((({{EXT}} << {{TIME_BITS}}) | ((m.mark_ms - {{EPOCH}}) DIV {{UNIT}} + 1)) << {{SEQ_BITS}}), m.mark_ms, 0
      FROM {{PREFIX}}_mark m;
  END IF;
  SET @snowdrift_{{SLUG}}_w = NULL;
  -- check_ms = 0 until the reservation check below passes: if it raises, the row (which
  -- no rollback restores) sends every call to the slow path, which checks again.
  UPDATE {{PREFIX}}_lease
    SET holder = CONNECTION_ID(), expires_ms = now_ms + {{TTL_MS}}, check_ms = 0, worker_id = (@snowdrift_{{SLUG}}_w := worker_id)
    WHERE holder IS NULL OR expires_ms <= now_ms OR holder = CONNECTION_ID()
      OR NOT (IS_USED_LOCK(CONCAT('snowdrift:', holder)) <=> holder)
    ORDER BY holder <=> CONNECTION_ID() DESC, worker_id DESC
    LIMIT 1;
  SET w = @snowdrift_{{SLUG}}_w;
  IF w IS NULL THEN
    SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = {{EXHAUSTED}};
  END IF;
  -- Leases a rolled-back or lost call may have left with this session.
  UPDATE {{PREFIX}}_lease SET holder = NULL, expires_ms = 0 WHERE holder = CONNECTION_ID() AND worker_id <> w;
  SET done = {{PREFIX}}_check(w);
  UPDATE {{PREFIX}}_lease SET check_ms = now_ms + {{RECHECK_MS}} WHERE worker_id = w AND holder = CONNECTION_ID();
  SELECT counter INTO c FROM {{PREFIX}}_lease WHERE worker_id = w;
  SET pause = {{EPOCH}} + (CAST((c >> {{SEQ_BITS}}) & {{TIME_MASK}} AS SIGNED) - {{LEAD_TICKS}}) * {{UNIT}} - now_ms;
  IF pause > {{MARK_WAIT_MS}} THEN
    SIGNAL SQLSTATE '45002' SET MESSAGE_TEXT = {{MARK_AHEAD}};
  END IF;
  IF pause > 0 THEN
    SELECT SLEEP(pause / 1000) INTO slept;
  END IF;
  RETURN w;
END
-- ;;
-- Moves the session's worker ID's counter to the next `n` values (the first of the
-- clock's tick if the clock has moved on), renewing its lease; leases again when the lease
-- ended or was taken. Sets @snowdrift_{{SLUG}}_first and returns the last value taken.
CREATE OR REPLACE FUNCTION {{PREFIX}}_next(n BIGINT) RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE done INT;
  DECLARE now_ms BIGINT DEFAULT {{PREFIX}}_now();
  DECLARE now_t BIGINT DEFAULT IF(now_ms < {{EPOCH}}, -1, (now_ms - {{EPOCH}}) DIV {{UNIT}});
  DECLARE tries INT DEFAULT 0;
  DECLARE c BIGINT;
  DECLARE t BIGINT;
  DECLARE pause BIGINT;
  DECLARE slept INT;
  DECLARE started BIGINT DEFAULT now_ms;
  LOOP
    IF @snowdrift_{{SLUG}}_w IS NULL THEN
      SET done = {{PREFIX}}_take(now_ms);
      SET now_ms = {{PREFIX}}_now();
      SET now_t = IF(now_ms < {{EPOCH}}, -1, (now_ms - {{EPOCH}}) DIV {{UNIT}});
      SET started = now_ms;
    END IF;
    -- The run ends with the last tick the clock (and lead) allows and the row's mark
    -- covers.
    UPDATE {{PREFIX}}_lease
      SET counter = (@snowdrift_{{SLUG}}_last := GREATEST(counter,
            LEAST((@snowdrift_{{SLUG}}_first := GREATEST(counter + 1, (({{EXT}} << {{TIME_BITS}}) | GREATEST(now_t, 0)) << {{SEQ_BITS}})) + n - 1,
                  (({{EXT}} << {{TIME_BITS}}) | GREATEST(0, LEAST(now_t + {{LEAD_TICKS}}, (mark_ms + 1 - {{EPOCH}}) DIV {{UNIT}} - 1, {{MAX_TICK}}))) << {{SEQ_BITS}} | {{SEQ_MASK}}))),
          expires_ms = now_ms + {{TTL_MS}}
      WHERE worker_id = @snowdrift_{{SLUG}}_w AND holder = CONNECTION_ID() AND expires_ms > now_ms;
    IF ROW_COUNT() = 0 THEN
      -- The lease ended or was taken: never issue under it again, lease one anew.
      SET @snowdrift_{{SLUG}}_w = NULL;
      SET tries = tries + 1;
      IF tries > 3 THEN
        SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = {{EXHAUSTED}};
      END IF;
    ELSEIF @snowdrift_{{SLUG}}_last >= @snowdrift_{{SLUG}}_first THEN
      RETURN @snowdrift_{{SLUG}}_last;
    ELSE
      -- Nothing fits: the counter is ahead of the clock (a step back, or a full tick),
      -- or past the mark. Wait within the bound, or write the mark ahead.
      SET c = @snowdrift_{{SLUG}}_first;
      SET t = CAST((c >> {{SEQ_BITS}}) & {{TIME_MASK}} AS SIGNED);
      IF t > {{MAX_TICK}} OR (c >> {{EXT_SHIFT}}) <> {{EXT}} THEN
        SIGNAL SQLSTATE '45004' SET MESSAGE_TEXT = {{TIME_FULL}};
      END IF;
      IF t > now_t + {{LEAD_TICKS}} THEN
        SET pause = {{EPOCH}} + (t - {{LEAD_TICKS}}) * {{UNIT}} - now_ms;
        IF now_ms + pause - started > {{BACKWARD_MS}} THEN
          SIGNAL SQLSTATE '45003' SET MESSAGE_TEXT = {{CLOCK_BEHIND}};
        END IF;
        SELECT SLEEP(pause / 1000) INTO slept;
      ELSE
        SET done = {{PREFIX}}_mark(t, now_ms);
      END IF;
      SET now_ms = {{PREFIX}}_now();
      SET now_t = IF(now_ms < {{EPOCH}}, -1, (now_ms - {{EPOCH}}) DIV {{UNIT}});
    END IF;
  END LOOP;
END
-- ;;
-- Writes the session's worker ID's mark a window ahead of tick `t` and of the clock when
-- the row's mark is within half a window of it (durable before it returns: Aria syncs
-- its log at the end of the statement), then the row's mark; and checks the reservation
-- when the row says it is due (once a second). Does nothing for a lease lost: the
-- caller's UPDATE finds that out.
CREATE OR REPLACE FUNCTION {{PREFIX}}_mark(t BIGINT, now_ms BIGINT) RETURNS INT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE done INT;
  DECLARE need BIGINT DEFAULT GREATEST(now_ms, {{EPOCH}} + (t + 1) * {{UNIT}} - 1);
  DECLARE w INT DEFAULT @snowdrift_{{SLUG}}_w;
  DECLARE m BIGINT DEFAULT (SELECT mark_ms FROM {{PREFIX}}_lease WHERE worker_id = w AND holder = CONNECTION_ID());
  DECLARE due BIGINT DEFAULT (SELECT check_ms FROM {{PREFIX}}_lease WHERE worker_id = w AND holder = CONNECTION_ID());
  IF m IS NULL THEN
    RETURN 0;
  END IF;
  IF now_ms >= due THEN
    SET done = {{PREFIX}}_check(w);
    UPDATE {{PREFIX}}_lease SET check_ms = now_ms + {{RECHECK_MS}} WHERE worker_id = w;
  END IF;
  IF need > m - {{HALF_WINDOW_MS}} THEN
    UPDATE {{PREFIX}}_mark SET mark_ms = GREATEST(mark_ms, need + {{WINDOW_MS}}) WHERE worker_id = w;
    SET m = (SELECT mark_ms FROM {{PREFIX}}_mark WHERE worker_id = w);
    UPDATE {{PREFIX}}_lease SET mark_ms = GREATEST(mark_ms, m) WHERE worker_id = w;
  END IF;
  RETURN 1;
END
-- ;;
-- The ID of counter value `c` under the session's worker ID.
CREATE OR REPLACE FUNCTION {{PREFIX}}_compose(c BIGINT, w INT) RETURNS BIGINT DETERMINISTIC NO SQL SQL SECURITY DEFINER
RETURN ((((c >> {{SEQ_BITS}}) << {{HIGH_SHIFT}}) | (c & {{SEQ_MASK}})) << {{SEQ_SHIFT}}) | ({{NODE_EXPR}})
-- ;;
-- One ID, the slow way: leases a worker ID, writes the mark, waits for the clock. The
-- common case (a lease held, the mark not due) is one UPDATE inside snowdrift_id itself
-- (the fast path below, which MariaDB's cost of a function call makes worth inlining).
CREATE OR REPLACE FUNCTION {{PREFIX}}_id() RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE done INT;
  DECLARE c BIGINT;
  IF @snowdrift_{{SLUG}}_w IS NULL THEN
    SET done = {{PREFIX}}_take({{PREFIX}}_now());
  END IF;
  SET done = {{PREFIX}}_mark(0, {{PREFIX}}_now());
  SET c = {{PREFIX}}_next(1);
  RETURN {{PREFIX}}_compose(c, @snowdrift_{{SLUG}}_w);
END
-- ;;
-- `n` IDs (at most {{MAX_COUNT}}), in order, as a JSON array.
CREATE OR REPLACE FUNCTION {{PREFIX}}_ids(n INT) RETURNS LONGTEXT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE done INT;
  DECLARE left_ BIGINT DEFAULT n;
  DECLARE last_ BIGINT;
  DECLARE first_ BIGINT;
  DECLARE part LONGTEXT;
  DECLARE out_ LONGTEXT DEFAULT '';
  IF n IS NULL OR n < 0 OR n > {{MAX_COUNT}} THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = {{BAD_COUNT}};
  END IF;
  WHILE left_ > 0 DO
    IF @snowdrift_{{SLUG}}_w IS NULL THEN
      SET done = {{PREFIX}}_take({{PREFIX}}_now());
    END IF;
    SET done = {{PREFIX}}_mark(0, {{PREFIX}}_now());
    SET last_ = {{PREFIX}}_next(left_);
    SET first_ = @snowdrift_{{SLUG}}_first;
    SELECT GROUP_CONCAT({{PREFIX}}_compose(first_ + seq, @snowdrift_{{SLUG}}_w) ORDER BY seq SEPARATOR ',') INTO part
      FROM seq_0_to_{{MAX_INDEX}} WHERE seq <= last_ - first_;
    SET out_ = IF(out_ = '', part, CONCAT(out_, ',', part));
    SET left_ = left_ - (last_ - first_ + 1);
  END WHILE;
  RETURN CONCAT('[', out_, ']');
END
