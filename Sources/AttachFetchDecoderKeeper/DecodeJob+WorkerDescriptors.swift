import AttachFetchCore
import AttachFetchDecoderProtocol
#if canImport(Glibc)
import Glibc
#endif

extension DecodeJob {
    /// The job's unnamed files as the worker gets them: its output as it is (the worker writes
    /// it), every other (its source) as a new read-only descriptor. The pipeline's own is
    /// writable, and a worker taken over by the file would rewrite through it what is then
    /// delivered as it is, under the hash taken before the job; the file's mode (0400) keeps it
    /// from reopening a read-only one for writing.
    func descriptorsForWorker() -> Result<[Int32], Reason> {
        let output = outputBase.flatMap(UnnamedFile.descriptor(in:))
        var sent: [Int32] = []
        for descriptor in unnamedDescriptors {
            if descriptor == output {
                sent.append(descriptor)
                continue
            }
            let readOnly = UnnamedFile.readOnlyDescriptor(of: descriptor)
            guard readOnly >= 0 else {
                let error = String(cString: strerror(errno))
                closeDescriptorsForWorker(sent)
                return .failure(Reason(code: .ioError, message: "cannot open the decoder's source read-only: \(error)"))
            }
            sent.append(readOnly)
        }
        return .success(sent)
    }

    /// Closes what `descriptorsForWorker` opened (every descriptor but the job's output).
    func closeDescriptorsForWorker(_ sent: [Int32]) {
        let output = outputBase.flatMap(UnnamedFile.descriptor(in:))
        for descriptor in sent where descriptor != output { close(descriptor) }
    }
}
