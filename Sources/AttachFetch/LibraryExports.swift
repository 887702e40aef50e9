// `import AttachFetch` gives the public API of every layer of the library.
@_exported import AttachFetchCore
@_exported import AttachFetchRuntime
@_exported import AttachFetchTransfer
@_exported import AttachFetchMedia
@_exported import AttachFetchDecoderProtocol
@_exported import AttachFetchDecoderKeeper
@_exported import AttachFetchObjectStore
