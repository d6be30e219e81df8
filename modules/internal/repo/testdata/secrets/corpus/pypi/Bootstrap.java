public class Bootstrap {
    static {
        System.setProperty("pypi.upload.token", "pypi@@-AgEIcHlwaS5vcmc959fbfc3c75c7d96a817256240275c00d269ad12257e51182dcd0db7be118808");
    }
}
