// MARK: Orientation

extension Stage {
    /// A JPEG whose EXIF blocks state different orientations (a tool that added its own block
    /// and left the camera's) shows one way where the first block counts (libvips, and so the
    /// thumbnail and the descriptor's size) and another where a later one does. Its pixels are
    /// turned as the first block says and no tag is left, so that every reader shows what the
    /// thumbnail shows (`oriented`): its DCT blocks moved, keeping its ICC profile, where whole
    /// blocks allow (TurboJPEG's lossless transform), else encoded again. Late, the file is
    /// delivered as it came.
    static let orientOnce = Stage(name: "orient once", body: .decode(
        on: .image, whenLate: .degrade, timing: .normalize,
        job: { work, configuration in
            let file = work.admitted
            guard file.type == .jpeg, work.thumbnail?.orientationsDisagree == true else { return nil }
            var limits = NormalizeLimits(configuration)
            limits.turnsLosslessly = true
            return .normalize(source: file.path, type: file.type, destinationBase: work.convertedOutput(), limits: limits)
        },
        take: { answer, work in
            guard let image = answer.normalized else { return }
            work.supersede(with: .init(path: image.file, type: image.type))
            work.descriptor.record(oriented: image)
        }))
}
