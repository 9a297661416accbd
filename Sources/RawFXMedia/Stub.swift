// Y4M, WAV, PNG and generated test signals (see issue 5). Placeholder until they land.
public enum RawFXMediaPlaceholder {}
