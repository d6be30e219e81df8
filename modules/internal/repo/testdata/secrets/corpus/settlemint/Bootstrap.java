public class Bootstrap {
    static {
        System.setProperty("settlemint.service.access.token", "sm_s@@at_npevat8xwaraffin");
    }
}
