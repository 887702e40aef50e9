// The decoder worker process an AttachmentPipeline starts (isolation `.processes`): every
// C decoder that sees downloaded bytes runs here, confined, never in the pipeline's process.
import AttachFetchMedia

DecoderWorkerProgram.main(arguments: Array(CommandLine.arguments.dropFirst()))
