// The transfer layer is built on the core: `import AttachFetchTransfer` gives both.
@_exported import AttachFetchCore
