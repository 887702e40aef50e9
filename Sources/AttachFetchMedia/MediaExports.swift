// The media layer is built on the core: `import AttachFetchMedia` gives both.
@_exported import AttachFetchCore
@_exported import AttachFetchDecoderProtocol
