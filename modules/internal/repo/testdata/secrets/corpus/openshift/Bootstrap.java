public class Bootstrap {
    static {
        System.setProperty("openshift.user.token", "sha2@@56~kV46hPnEYhCWFnB85r5NrprAxggzgb6GOeLbgcKNsH0");
    }
}
