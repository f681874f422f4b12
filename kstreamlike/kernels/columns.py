"""Names of the internal columns the Polars backend adds to the input."""

from __future__ import annotations

from kstreamlike.plan.validity import EVENT_TIME, SESSION_GAP

ROW = "__ks_row"  # position of the row in the input frame
SEQ = "__ks_seq"  # arrival position: partition-major, then order_by (or row position)
PART = "__ks_part"  # the partition value (0 when the stream has no partition column)
TS = EVENT_TIME  # event time in ticks (Int64)
GROUP = "__ks_group"  # id of a session store: the partition (when it varies) and the key
GAP = SESSION_GAP  # dynamic session gap in ticks (Flink with_dynamic_gap)
PROC = "__ks_proc"  # Flink processing time in ticks (streams with a processing_time column)
# A row that stands for a moment of the partition (its watermark and clock there), not for a
# record: the Spark backend runs one key with them in place of the other keys' records.
STAND_IN = "__ks_stand_in"
REASON = "reason"  # side-output reason (public column name)

START = "window_start"
END = "window_end"
TIMESTAMP = "timestamp"
EMIT_ORDER = "emit_order"
TOMBSTONE = "is_tombstone"
# The step of the partition's replay that emitted an output row (plan.emit_order), counted
# over the whole input: Kafka, the arrival position (SEQ) of the record whose processing
# emitted the row; Flink, the position (POS, plan.positions). The backend subtracts the
# partition's first one.
EMIT_STEP = "__ks_emit_step"
EMIT_RANK = "__ks_emit_rank"  # a row's place among the rows of its step (plan.emit_order)

# Emission order, suppression and Python functions.
DELETED = "__ks_deleted"  # Python functions: whether the update deletes the window
DUE = "__ks_due"  # the time at which a row is due
EVICT = "__ks_evict"  # the changelog position at which suppress evicts a row
FIRST = "__ks_first"  # the first position whose time reaches a row's time
LOG_POS = "__ks_log_pos"  # a row's position in the changelog
NEXT_UPDATE = "__ks_next"  # the changelog position of the window's next row
RUNNING_TS = "__ks_running_ts"  # Python functions: the running maximum timestamp
TIME = "__ks_time"  # a partition's time (stream time or watermark) after a row

# Kafka Streams kernels.
ANCESTOR = "__ks_ancestor"  # a window of a chain of parents
CANDIDATE = "__ks_candidate"  # the previous arrival of the record's final session
CANDIDATE_END = "__ks_candidate_end"  # last position of the candidate session
CANDIDATE_START = "__ks_candidate_start"  # first position of the candidate session
CHAIN = "__ks_chain"  # the first update of an update's chain
CHAIN_HEAD = "__ks_chain_head"  # row of the chain's first member
CHAIN_MAIN = "__ks_chain_main"  # update whose fold the record's update continues
CHAIN_MEMBER = "__ks_chain_member"  # arrival position of a record listed in a chain
CHAIN_SIDE = "__ks_chain_side"  # update merged in as a whole
CHANGE = "__ks_change"  # row of the changelog an output row reads its value from
CLOSE = "__ks_close"  # stream time minus grace after the record (closeTime in #process)
CLOSED = "__ks_closed"  # first arrival after which no session boundary follows the position
CONSUMER = "__ks_consumer"  # the record that found an update's session
CONSUMER_TIME = "__ks_consumer_time"  # stream time after the consumer
COUNT = "__ks_count"  # number of records
CREATED = "__ks_created"  # arrival position of a window's creation
CUT = "__ks_cut"  # arrival before which an ancestor's contributions are inherited
DIRTY = "__ks_dirty"  # the store holds a record that neither arrives in grace nor is dropped
DROPPED = "__ks_dropped"  # a record dropped whole (even its right window has closed)
ELEMENT = "__ks_element"  # order within an update: absorbed session (0), own record (1)
FINAL = "__ks_final"  # id of the record's final session (the gap-split of all accepted records)
FINAL_END = "__ks_final_end"  # last position of the final session
FINAL_START = "__ks_final_start"  # first position of the final session
FIRST_AT_TS = "__ks_first_at_ts"  # the first record of its store at its timestamp
FIRST_SEQ = "__ks_first_seq"  # earliest arrival
FOUND_ROW = "__ks_found_row"  # row of a stored session in the session table
FROM = "__ks_from"  # position just before the first record of the record's merged session
GLOBAL = "__ks_global"  # a record's arrival position in the whole input
GRACE_ROW = "__ks_grace_row"  # a row of the regular rows, then of the irregular ones
KIND = "__ks_kind"  # what a forward is: an update or one of the creations
LAST_SEQ = "__ks_last_seq"  # latest arrival
LEFT = "__ks_left"  # nearest arrived record before the record's position, within gap
LIMIT = "__ks_limit"  # the close time (drops) or the stream time (merges) of the record
LIST_ROW = "__ks_list_row"  # the update a list is read for
MEMBER = "__ks_member"  # arrival position of a record in a window's content
MEMBER_INDEX = "__ks_member_index"  # row of a member in the chains' lists
MEMBER_TS = "__ks_member_ts"  # a member's timestamp
NEXT_SEQ = "__ks_next_seq"  # the window's next update: its record and forward
NEXT_SUB = "__ks_next_sub"  # the window's next update: its forward
OWN = "__ks_own"  # the member is a contribution (not inherited)
PACKED = "__ks_window"  # the packed id of a window
PAIR_HI = "__ks_pair_hi"  # the range of timestamps to pair with
PAIR_LO = "__ks_pair_lo"  # the range of timestamps to pair with
PAIR_RECORD = "__ks_pair_record"  # the arrival position of the record a pair belongs to
PARENT = "__ks_parent"  # start of the window a new window copies (null: none)
PARENT_POS = "__ks_parent_pos"  # row of the parent in the window table
POSITION = "__ks_position"  # position among the accepted records in (store, time, arrival) order
QUERY = "__ks_query"  # position of a query
QUERY_TS = "__ks_query_ts"  # the timestamp of a suspect record
REWRITTEN = "__ks_rewritten"  # the consumer stores the same window again
RIGHT = "__ks_right"  # nearest arrived record after the record's position, within gap
RUNMAX = "__ks_runmax"  # largest member timestamp so far
SIDE = "__ks_side"  # the update whose session is absorbed
ST = "__ks_st"  # the partition's stream time after the record
STRAGGLER_SLOT = "__ks_straggler_slot"  # position of a straggler
SUB = "__ks_sub"  # order of a record's forwards (sessions: tombstones 0, 1, then the update 2)
TIME_ORDER = "__ks_time_order"  # the sort key of (store, time)
TO = "__ks_to"  # position of the last record of the record's merged session
TS_MAX = "__ks_ts_max"  # largest timestamp
# arrival position of the record whose update a row is (Flink sessions: the record after which
# a firing reads its window)
UPDATE = "__ks_update"
UPDATE_ORDER = "__ks_update_order"  # order among a record's updates of existing windows
WPOS = "__ks_wpos"  # row of a window in the window table, sorted by (group, start)

# Flink kernels.
ADVANCE = "__ks_advance"  # the watermark an advance raises the partition to
AFTER = "__ks_after"  # the position right after an element
ARRIVAL_END = "__ks_arrival_end"  # the end of the record's window at its arrival
AT = "__ks_at"  # the last arrival position before a firing
AT_SEQ = "__ks_at_seq"  # an element's arrival position, searched for ``AT``
BLOCK = "__ks_block"  # purging count triggers: the firing that reads the element
CHAIN_START = "__ks_chain_start"  # the first periodic timer of a window's chain
# the time a window's chain starts from (rounded down, plus the interval)
CHAIN_TS = "__ks_chain_ts"
CLEANUP = "__ks_cleanup"  # cleanupTime(window)
CLEANUP_AT = "__ks_cleanup_at"  # cleanupTime of a session window (merging)
CLEANUP_TIME = "__ks_end_time"  # a time window's cleanup time (processing-time timers)
CLEAR = "__ks_clear"  # a window's cleanup (the function's clear), not a firing
CLOCK = "__ks_clock"  # the processing time when the record is processed
CREATOR = "__ks_creator"  # the record that created a window
DEATH = "__ks_death"  # arrival position at which the record's window is cleaned up
DELTA_FIRES = "__ks_delta_fires"  # whether the element fires its window
DELTA_SEGMENT = "__ks_segment"  # purging: the firings before the element
DOMAIN = "__ks_domain"  # at one position: event-time timers (0) before processing-time ones (1)
E = "__ks_e"  # the record's window end (exclusive, but compared inclusively)
ELEMENT_ROW = "__ks_element_row"  # delta evictor: a row the firing reads
EMITTED = "__ks_emitted"  # a firing's number among those that read something
PANE_POS = "__ks_emit_pos"  # emission position of a pane
EVICT_AFTER = "__ks_evict_after"  # a time range's exclusive lower bound
EVICT_FIRES = "__ks_evict_fires"  # delta evictor: whether the element fires its window
EVICT_HI = "__ks_evict_hi"  # last row of a time range
EVICT_INDEX = "__ks_evict_index"  # row of an element among its window's elements sorted by time
EVICT_LAST = "__ks_evict_last"  # the largest rank a time range takes
EVICT_LO = "__ks_evict_lo"  # first row of a time range
EVICT_NEWEST = "__ks_evict_newest"  # newest timestamp of the window up to the firing
EVICT_PREV = "__ks_evict_prev"  # the rank the window's previous firing fired at (-1: none)
EVICT_PREV_NEWEST = "__ks_evict_prev_newest"  # the same at the previous firing
EVICT_RANK = "__ks_evict_rank"  # position of an element in its window, from 0
EVICT_UPTO = "__ks_evict_upto"  # a time range's inclusive upper bound
EVICT_WINDOW = "__ks_evict_window"  # an Int64 id of the window
FID = "__ks_fid"  # a firing's number, in emission order
FIRE = "__ks_fire"  # emission position of a window's end timer
FIRED = "__ks_fired"  # the window rank of a firing's last element
FIRED_WM = "__ks_fired_wm"  # the watermark when a window fires
FIRE_CLOCK = "__ks_fire_clock"  # the processing time then (streams with processing_time)
FIRE_RANK = "__ks_fire_rank"  # the rank of an element a firing reads
FIRE_WM = "__ks_fire_wm"  # the watermark when the window fires
FIRING_ROW = "__ks_firing_row"  # delta evictor: the firing element's row
FIRING_UP = "__ks_firing_up"  # the nearest window up the chain of merges that fires (itself too)
FIRST_ARRIVAL = "__ks_first_arrival"  # the partition's first arrival position
FIRST_WM = "__ks_first_wm"  # the watermark then
FOUND_AT = "__ks_found_at"  # the record that found a window
FOUND_HI = "__ks_found_hi"  # last position of a found window
FOUND_LO = "__ks_found_lo"  # first position of a found window
FROM_END = "__ks_from_end"  # how many listed elements come after the element
GONE = "__ks_gone"  # the position at which a window is cleaned up: its timers fire before it
HORIZON = "__ks_horizon"  # the last watermark advance before the end of the input
KEEP = "__ks_keep"  # whether the element is read by the firing (survives eviction before)
KEYG = "__ks_keyg"  # id of (partition, key): one merging window set
LAST = "__ks_last"  # the partition's last arrival position
LATEST = "__ks_latest"  # the partition's last clock advance
LIST_ORDER = "__ks_list_order"  # an element's place in its window's list (with its arrival)
MERGED_INTO = "__ks_merged_into"  # the window a window is merged into
NEWEST = "__ks_newest"  # the newest timestamp a firing lists
NEXT_TICK = "__ks_next_tick"  # the first clock advance after an element
NOW = "__ks_now"  # the processing time when a window was created (took its first element)
ORDER = "__ks_order"  # the arrival-order value explicit watermarks refer to
PERIODIC_COUNT = "__ks_periodic_count"  # how many of a chain's periodic timers the clock reaches
PERIODIC_START = "__ks_start"  # a periodic chain's first timer (processing-time chains)
POS = "__ks_pos"  # emission position of a firing within its partition
PREV_FIRED = "__ks_prev_fired"  # the rank the window's previous firing fired at (-1: none)
QID = "__ks_qid"  # position of a query, to restore the order after a sort
RANK = "__ks_rank"  # position of a record in its window, in arrival order, from 0
REACH = "__ks_reach"  # the smallest watermark advance that fires a timer
REACHED = "__ks_reached"  # the first clock advance reaching the window's end
READ = "__ks_read"  # the window rank of an element a firing may read
READ_HI = "__ks_read_hi"  # the rank of the last element a firing reads
READ_LO = "__ks_read_lo"  # the rank of the first element a firing reads
REMOVED = "__ks_removed"  # whether the firing removes the element from its window
RETIRED = "__ks_retired"  # the late record that retires a window (see retired_windows)
SESSION_CLEANUP_TIME = "__ks_cleanup_time"  # a session window's cleanup time (processing time)
SLOT = "__ks_slot"  # emission position of an advance (even: 2 * arrival position)
STEP = "__ks_step"  # within one timer: the firing (0) before the cleanup (1)
SUPERSEDED = "__ks_superseded"  # the record that merged a window into a larger one
SWEEP_ORDER = "__ks_sweep_order"  # sweep order of the points and queries of an interval layout
SWEEP_VALUE = "__ks_v"  # the value a sweep carries
TICK = "__ks_tick"  # the processing time a clock advance raises the partition to
TIE = "__ks_tie"  # order within a position: a timer's timestamp, or the assigner index
TIMER = "__ks_timer"  # a timer's timestamp (null for a late firing)
TIMER_WM = "__ks_timer_wm"  # the watermark when a timer fires
WEND = "__ks_wend"  # window end (exclusive)
WID = "__ks_wid"  # an Int64 id of a window (its group and bounds)
# index of the window in the assigner's list for the record (0: the only one)
WINDEX = "__ks_windex"
WINDOW_RANK = "__ks_window_rank"  # an element's rank in its window
WM = "__ks_wm"  # the watermark when the record is processed (before it)
WMAX = "__ks_wmax"  # window maxTimestamp (end - 1; Long.MAX_VALUE for the global window)
WM_NEXT = "__ks_wm_next"  # generated watermarks: the watermark right after the record
WM_ROW = "__ks_wm_row"  # a recorded watermark's row in its frame
WRITER = "__ks_writer"  # the record whose window a found window was
WSTART = "__ks_wstart"  # window start
