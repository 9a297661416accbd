public enum RawFXMediaStub {}
