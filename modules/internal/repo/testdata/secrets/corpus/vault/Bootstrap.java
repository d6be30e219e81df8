public class Bootstrap {
    static {
        System.setProperty("vault.batch.token", "hvb.@@pv2h-735382hj65ld_s3qysx2pxrbklocyuuezg6r42qm9ooeozhqoqoi1-ic8s-fwug9g_z7glhjj2lnmawznqmssxa60sanllgz_e6j7b1x6d3-xnxc8l9mosjxx3jtzh6vextzo");
    }
}
