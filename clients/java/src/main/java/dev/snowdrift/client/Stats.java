package dev.snowdrift.client;

/**
 * The counts of one name's cache, from {@link Client#stats(String)}.
 *
 * @param served IDs that left the cache: handed out, or held in a thread's block of at most 64
 *     to be handed out next on that thread (see {@link Client#next(String)})
 * @param fetches batches fetched from a server
 * @param wasted IDs skipped for good: snowflake IDs dropped unused once older than
 *     {@code maxAge} (never handed out late), IDs a {@code nextN} had taken when its fetch for
 *     the rest failed, and, once the client is closed, what it still cached
 * @param cached IDs cached now
 * @param batch the size of the next fetch, as adapted to the rate of use
 * @param refused answers refused because they repeated IDs this name had received (or
 *     overlapped themselves); each left its endpoint out and was asked of the next
 */
public record Stats(long served, long fetches, long wasted, long cached, long batch, long refused) {}
