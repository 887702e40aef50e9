internal import CAttachFetchShims

/// Names the calling thread as ps, top, perf and the leak tests see it (the kernel keeps 15
/// characters).
///
/// Why not `Thread.current.name = …`: swift-corelibs-foundation passes the name to the kernel
/// only once `start()` has stored the new thread's handle, which the starting thread does after
/// `pthread_create` returns; a new thread that runs first stays unnamed (seen now and then in
/// the leak test: one thumbnail thread of three missing).
package func nameCurrentThread(_ name: String) {
    _ = af_prctl_set_name(name)
}
