package dev.snowdrift.client;

/**
 * An error from the client: a {@link #kind()} to branch on and a message that says what
 * happened and what to do.
 */
public final class SnowdriftException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The kind; never null. */
    private final ErrorKind kind;

    SnowdriftException(ErrorKind kind, String message) {
        super(message);
        this.kind = kind;
    }

    /**
     * What went wrong.
     *
     * @return the kind of error
     */
    public ErrorKind kind() {
        return kind;
    }

    /**
     * Whether asking again cannot help until something changes (a name, a token, the code).
     * Outages ({@link ErrorKind#UNAVAILABLE}) are not final: the client rides them out by
     * itself, and a later call may succeed.
     *
     * @return true for errors a retry cannot fix
     */
    public boolean isFinal() {
        return kind != ErrorKind.UNAVAILABLE && kind != ErrorKind.INTERRUPTED;
    }
}
