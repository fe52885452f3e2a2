/**
 * A second try beside a slow first one (a hedged request, "The Tail at Scale", Dean and Barroso, 2013): when the
 * first attempt has not settled within `afterMs`, a second starts beside it; the first success wins and the other
 * is aborted. Only for requests that cannot take effect twice: a read, or a write with a resourceVersion precondition —
 * of two such writes at most one lands, and the other gets 409, even when it reaches its server after the winner.
 *
 * Why: a status write the balancer sent to a server cut from etcd sits there until its deadline (5 s), and the
 * look's check is lost with it; with two servers of three cut, most writes went there (fault campaign, nodes seed
 * 381 #2: a 3 x 2 s limit acted on 7.5 s late; 381 #6: a Job read held the same way). A second connection is
 * balanced anew, most likely to a server that answers.
 *
 * The first attempt failing before the second started ends the call with its error: retrying failures is the
 * caller's policy, not this one's. Both failing: the first failure's error, once both settled. `wantSecond`, asked
 * when the second is due, may decline it (too little time left): the first attempt alone decides then, so a
 * declined try never stands in for the first's own answer (a 409 stays a 409).
 */
export function hedged<T>(attempt: (signal: AbortSignal, second: boolean) => Promise<T>, afterMs: number, wantSecond: () => boolean = () => true): Promise<T> {
  const controllers = [new AbortController(), new AbortController()] as const;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let running = 0;
    let secondStarted = false;
    let failure: { error: unknown } | undefined;
    const start = (i: 0 | 1): void => {
      running++;
      attempt(controllers[i].signal, i === 1).then(
        (value) => {
          running--;
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          controllers[i === 0 ? 1 : 0].abort();
          resolve(value);
        },
        (error: unknown) => {
          running--;
          if (settled) return;
          failure ??= { error };
          if (!secondStarted || running === 0) {
            settled = true;
            clearTimeout(timer);
            reject(failure.error);
          }
        },
      );
    };
    const timer = setTimeout(() => {
      if (settled || !wantSecond()) return;
      secondStarted = true;
      start(1);
    }, afterMs);
    start(0);
  });
}
